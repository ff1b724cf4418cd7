//===- EmitEntryABI.cpp - The C ABI of compiled entries ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-emit-entry-abi: after lowering to LLVM, wraps each recorded function
// as `int32_t hla_<f>(void *const *in, void *const *out)` plus a signature
// string, the ABI the runtime and shared libraries use.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "hla-emit-entry-abi"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAEMITENTRYABIPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct HLAEmitEntryABIPass
    : public hla::impl::HLAEmitEntryABIPassBase<HLAEmitEntryABIPass> {
  using HLAEmitEntryABIPassBase::HLAEmitEntryABIPassBase;

  /// Parses "dtype:AxB" shapes from the signature.
  static llvm::SmallVector<llvm::SmallVector<int64_t>>
  shapesOf(llvm::StringRef list) {
    llvm::SmallVector<llvm::SmallVector<int64_t>> shapes;
    if (list.empty())
      return shapes;
    llvm::SmallVector<llvm::StringRef> items;
    list.split(items, ',');
    for (llvm::StringRef item : items) {
      llvm::SmallVector<int64_t> shape;
      llvm::StringRef dims = item.split(':').second;
      if (!dims.empty()) {
        llvm::SmallVector<llvm::StringRef> parts;
        dims.split(parts, 'x');
        for (llvm::StringRef p : parts) {
          int64_t v = 0;
          (void)p.getAsInteger(10, v);
          shape.push_back(v);
        }
      }
      shapes.push_back(shape);
    }
    return shapes;
  }

  void emitSignature(OpBuilder &b, Location loc, llvm::StringRef name,
                     llvm::StringRef text) {
    std::string value = text.str();
    value.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), value.size());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                           LLVM::Linkage::External, name,
                           b.getStringAttr(value));
  }

  LogicalResult wrap(ModuleOp module, llvm::StringRef name,
                     llvm::StringRef signature) {
    auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
    if (!callee)
      return module.emitError()
             << "hla-emit-entry-abi: no lowered function '" << name << "'";
    auto [fn, rest] = signature.split('|');
    auto [inputs, outputs] = rest.split('|');
    llvm::SmallVector<llvm::SmallVector<int64_t>> shapes = shapesOf(inputs);
    llvm::append_range(shapes, shapesOf(outputs));
    size_t numInputs = shapesOf(inputs).size();

    MLIRContext *ctx = module.getContext();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = callee.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = b.getI64Type();
    auto i32 = b.getI32Type();
    auto bodyType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr});
    // The body unpacks the pointer arrays into memref descriptors and calls
    // the compiled function.
    auto emitBody = [&](llvm::StringRef bodyName) -> LLVM::LLVMFuncOp {
      auto wrapper = LLVM::LLVMFuncOp::create(b, loc, bodyName, bodyType,
                                              LLVM::Linkage::Internal);
      Block *entry = wrapper.addEntryBlock(b);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      llvm::SmallVector<Value> args;
      auto constant = [&](int64_t v) -> Value {
        return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
      };
      for (auto [i, shape] : llvm::enumerate(shapes)) {
        Value array = entry->getArgument(i < numInputs ? 0 : 1);
        int64_t slot = i < numInputs ? i : i - numInputs;
        Value address = LLVM::GEPOp::create(b, loc, ptr, ptr, array,
                                            llvm::ArrayRef<LLVM::GEPArg>{slot});
        Value data = LLVM::LoadOp::create(b, loc, ptr, address);
        // The expanded memref descriptor: allocated, aligned, offset,
        // sizes, row-major strides.
        args.push_back(data);
        args.push_back(data);
        args.push_back(constant(0));
        for (int64_t size : shape)
          args.push_back(constant(size));
        int64_t stride = 1;
        llvm::SmallVector<Value> strides(shape.size());
        for (size_t d = shape.size(); d-- > 0;) {
          strides[d] = constant(stride);
          stride *= shape[d];
        }
        llvm::append_range(args, strides);
      }
      if (args.size() != callee.getNumArguments()) {
        wrapper.erase();
        return nullptr;
      }
      LLVM::CallOp::create(b, loc, callee, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
      return wrapper;
    };
    // The exported entry runs the body through the runtime, which turns a
    // failed check (hla_abort) into a non-zero status.
    auto runtimeCall =
        module.lookupSymbol<LLVM::LLVMFuncOp>("hla_runtime_call");
    if (!runtimeCall) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      runtimeCall = LLVM::LLVMFuncOp::create(
          b, loc, "hla_runtime_call",
          LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr}));
    }
    auto emitEntry = [&](llvm::StringRef entryName, LLVM::LLVMFuncOp body) {
      auto wrapper = LLVM::LLVMFuncOp::create(
          b, loc, entryName, LLVM::LLVMFunctionType::get(i32, {ptr, ptr}));
      Block *block = wrapper.addEntryBlock(b);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(block);
      Value address = LLVM::AddressOfOp::create(b, loc, body);
      Value status =
          LLVM::CallOp::create(
              b, loc, runtimeCall,
              ValueRange{address, block->getArgument(0), block->getArgument(1)})
              .getResult();
      LLVM::ReturnOp::create(b, loc, status);
    };
    // The compiled function gets a private name: `main` would clash with
    // the runtime's main, any other name could clash with user code.
    std::string internalName = ("__hla_fn_" + name).str();
    if (failed(SymbolTable::replaceAllSymbolUses(
            callee, b.getStringAttr(internalName), module)))
      return failure();
    callee.setSymName(internalName);
    callee.setLinkage(LLVM::Linkage::Internal);
    LLVM::LLVMFuncOp body = emitBody(("__hla_call_" + name).str());
    if (!body)
      return callee.emitError()
             << "hla-emit-entry-abi: '" << name
             << "' does not take its results as out-parameters "
                "(run buffer-results-to-out-params first)";
    emitEntry(("hla_" + name).str(), body);
    emitSignature(b, loc, ("hla_" + name + "_signature").str(), signature);
    if (entry == name) {
      emitEntry("hla_entry", body);
      emitSignature(b, loc, "hla_entry_signature", signature);
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto signatures = module->getAttrOfType<DictionaryAttr>("hla.signatures");
    if (!signatures) {
      module.emitError() << "hla-emit-entry-abi: no hla.signatures (run "
                            "hla-record-signatures before bufferization)";
      return signalPassFailure();
    }
    if (!entry.empty() && !signatures.get(entry)) {
      module.emitError() << "hla-emit-entry-abi: entry function '" << entry
                         << "' is not a public function with a static tensor "
                            "signature";
      return signalPassFailure();
    }
    for (NamedAttribute attr : signatures)
      if (failed(wrap(module, attr.getName(),
                      cast<StringAttr>(attr.getValue()).getValue())))
        return signalPassFailure();
    module->removeAttr("hla.signatures");
  }
};

} // namespace
