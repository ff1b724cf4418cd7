//===- LowerAsserts.cpp - Run-time checks as runtime calls ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-lower-asserts: run-time checks (cf.assert) become calls of the
// artefact runtime's hla_abort, which fails the running entry call.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "hla-lower-asserts"

namespace mlir::hla {
#define GEN_PASS_DEF_HLALOWERASSERTSPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct HLALowerAssertsPass
    : public hla::impl::HLALowerAssertsPassBase<HLALowerAssertsPass> {
  using HLALowerAssertsPassBase::HLALowerAssertsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp op) { asserts.push_back(op); });
    if (asserts.empty())
      return;
    MLIRContext *ctx = module.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto abortFn = module.lookupSymbol<LLVM::LLVMFuncOp>("hla_abort");
    if (!abortFn)
      abortFn = LLVM::LLVMFuncOp::create(
          b, module.getLoc(), "hla_abort",
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr}));
    unsigned counter = 0;
    llvm::StringMap<LLVM::GlobalOp> messages;
    for (cf::AssertOp op : asserts) {
      std::string text = op.getMsg().str();
      LLVM::GlobalOp &global = messages[text];
      if (!global) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(module.getBody());
        std::string value = text;
        value.push_back('\0');
        global = LLVM::GlobalOp::create(
            b, op.getLoc(),
            LLVM::LLVMArrayType::get(b.getI8Type(), value.size()),
            /*isConstant=*/true, LLVM::Linkage::Internal,
            "__hla_assert_" + std::to_string(counter++),
            b.getStringAttr(value));
      }
      // Split: ... assert ... -> ... cond_br(ok, continue, fail).
      Block *before = op->getBlock();
      Block *after = before->splitBlock(op->getNextNode());
      Block *fail = new Block();
      before->getParent()->getBlocks().insertAfter(before->getIterator(), fail);
      OpBuilder fb = OpBuilder::atBlockEnd(fail);
      Value address = LLVM::AddressOfOp::create(fb, op.getLoc(), global);
      LLVM::CallOp::create(fb, op.getLoc(), abortFn, ValueRange{address});
      LLVM::UnreachableOp::create(fb, op.getLoc());
      OpBuilder bb(op);
      cf::CondBranchOp::create(bb, op.getLoc(), op.getArg(), after, fail);
      op.erase();
    }
  }
};

} // namespace
