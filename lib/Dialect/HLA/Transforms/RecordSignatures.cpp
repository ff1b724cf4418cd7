//===- RecordSignatures.cpp - Tensor signatures of entries ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-record-signatures remembers public functions' tensor signatures
// ("f32:2x64x4x32,...") before bufferization turns them into memrefs;
// hla-emit-entry-abi reads them back.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "hla-record-signatures"

namespace mlir::hla {
#define GEN_PASS_DEF_HLARECORDSIGNATURESPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// "f32", "bf16", ... for a tensor element type, or "" if unsupported.
static std::string dtypeOf(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF64())
    return "f64";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  return "";
}

static std::string describe(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return "";
  std::string dtype = dtypeOf(tensor.getElementType());
  if (dtype.empty())
    return "";
  std::string text = dtype + ":";
  for (auto [i, size] : llvm::enumerate(tensor.getShape()))
    text += (i ? "x" : "") + std::to_string(size);
  return text;
}

struct HLARecordSignaturesPass
    : public hla::impl::HLARecordSignaturesPassBase<HLARecordSignaturesPass> {
  using HLARecordSignaturesPassBase::HLARecordSignaturesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::SmallVector<NamedAttribute> signatures;
    Builder b(module.getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isPrivate() || func.isExternal())
        continue;
      // The caller owns the inputs: bufferization must not write results
      // into them.
      for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
        if (isa<TensorType>(type))
          func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
      std::string text = func.getSymName().str() + "|";
      bool ok = true;
      auto appendList = [&](TypeRange types) {
        for (auto [i, type] : llvm::enumerate(types)) {
          std::string one = describe(type);
          ok &= !one.empty();
          text += (i ? "," : "") + one;
        }
      };
      appendList(func.getArgumentTypes());
      text += "|";
      appendList(func.getResultTypes());
      if (!ok) {
        if (strict) {
          func.emitError()
              << "an entry function needs statically shaped tensor arguments "
                 "and results of f32, f16, bf16, f64, i32 or i64";
          return signalPassFailure();
        }
        continue;
      }
      signatures.push_back(
          b.getNamedAttr(func.getSymName(), b.getStringAttr(text)));
    }
    module->setAttr("hla.signatures", b.getDictionaryAttr(signatures));
  }
};

} // namespace
