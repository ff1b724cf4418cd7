//===- TestReverseDiff.cpp - Functions' vector-Jacobian products -*- C++ -*-=//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// test-hla-reverse-diff: for every function `@f(args) -> y` of the module
// (one tensor result, a body of tensor ops), adds `@f_vjp(args, dy) ->
// (d args)` built by emitReverseDiff, for FileCheck tests of its rules.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

struct TestReverseDiffPass
    : public PassWrapper<TestReverseDiffPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestReverseDiffPass)

  StringRef getArgument() const final { return "test-hla-reverse-diff"; }
  StringRef getDescription() const final {
    return "Add each function's vector-Jacobian product (@f_vjp)";
  }

  LogicalResult addVjp(func::FuncOp f) {
    FunctionType type = f.getFunctionType();
    if (type.getNumResults() != 1 || f.isExternal())
      return f.emitError() << "test-hla-reverse-diff: @" << f.getName()
                           << " must have a body and one result";
    OpBuilder b(f->getContext());
    b.setInsertionPointAfter(f);
    llvm::SmallVector<Type> inputs(type.getInputs());
    inputs.push_back(type.getResult(0));
    auto vjp =
        func::FuncOp::create(b, f.getLoc(), (f.getName() + "_vjp").str(),
                             b.getFunctionType(inputs, type.getInputs()));
    Block *block = vjp.addEntryBlock();
    b.setInsertionPointToStart(block);
    IRMapping map;
    for (auto [from, to] :
         llvm::zip(f.getArguments(), block->getArguments().drop_back()))
      map.map(from, to);
    hla::OpRecorder recorder(b);
    for (Operation &op : f.getBody().front().without_terminator())
      b.clone(op, map);
    llvm::SmallVector<Operation *> program = recorder.recorded();
    Value y = map.lookup(f.getBody().front().getTerminator()->getOperand(0));
    FailureOr<llvm::SmallVector<Value>> grads = hla::emitReverseDiff(
        b, f.getLoc(), program, {{y, block->getArguments().back()}},
        llvm::SmallVector<Value>(block->getArguments().drop_back()));
    if (failed(grads)) {
      vjp.erase();
      return failure();
    }
    func::ReturnOp::create(b, f.getLoc(), *grads);
    return success();
  }

  void runOnOperation() override {
    llvm::SmallVector<func::FuncOp> functions(
        getOperation().getOps<func::FuncOp>());
    for (func::FuncOp f : functions)
      if (failed(addVjp(f)))
        signalPassFailure();
  }
};

} // namespace

namespace mlir::hla::test {
void registerTestReverseDiffPass() { PassRegistration<TestReverseDiffPass>(); }
} // namespace mlir::hla::test
