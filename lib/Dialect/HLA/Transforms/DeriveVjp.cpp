//===- DeriveVjp.cpp - A function replaced by its backward ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-derive-vjp: `f(q, k, v) = attention(q, k, v)` becomes
// `f(q, k, v, do) = (dq, dk, dv)`, the gradient an hla.prefix_vjp under the
// attention op's monoid. What the op's options mean is already in the monoid
// (getAttentionMonoid), so nothing here is per op.
//
//===----------------------------------------------------------------------===//

#include "TransformUtils.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLADERIVEVJPPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct DeriveVjpPass : public hla::impl::HLADeriveVjpPassBase<DeriveVjpPass> {
  using HLADeriveVjpPassBase::HLADeriveVjpPassBase;

  LogicalResult derive(func::FuncOp func) {
    auto fail = [&](Operation *at, const llvm::Twine &why) {
      return at->emitError() << "hla-derive-vjp: " << why;
    };
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    AttentionOpInterface attention = returnedAttentionOp(func);
    Operation *op = attention;
    if (attention && attention.getCuSeqlens())
      return fail(op, "packed sequences are not differentiated yet");
    if (!attention || !llvm::equal(ret.getOperands(), op->getResults()) ||
        body.getOperations().size() != 2)
      return fail(func, "@" + func.getName() +
                            " must return the output (and the final state) "
                            "of one attention op and do nothing else");
    if (!isa<LinearAttentionOp, HLA2Op, AHLAOp, HLA3Op>(op))
      return fail(op, "the backward of '" + op->getName().getStringRef() +
                          "' is not derived yet (linear_attention, hla2, "
                          "ahla and hla3 are)");
    llvm::SmallVector<Value> operands = {
        attention.getQuery(), attention.getKey(), attention.getValue()};
    ValueRange initial = attention.getInitialState();
    llvm::SmallVector<unsigned> argumentOf;
    for (Value v : llvm::concat<Value>(operands, initial)) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &body)
        return fail(op, "q, k, v and the initial state must be arguments of @" +
                            func.getName());
      if (llvm::is_contained(argumentOf, arg.getArgNumber()))
        return fail(op, "q, k, v and the initial state must be different "
                        "arguments (one argument's gradient would be a sum)");
      argumentOf.push_back(arg.getArgNumber());
    }
    if (func.getNumArguments() != argumentOf.size())
      return fail(func, "@" + func.getName() +
                            " must take exactly q, k, v and the initial state "
                            "as arguments");
    auto query = cast<RankedTensorType>(operands[0].getType());
    auto key = cast<RankedTensorType>(operands[1].getType());
    if (query.getRank() == 4 && key.getRank() == 4 &&
        query.getDimSize(2) != key.getDimSize(2))
      return fail(op, "grouped K/V heads are not differentiated yet");
    std::string reason;
    FailureOr<MonoidSpec> spec = getAttentionMonoid(op, reason);
    if (failed(spec))
      return fail(op, reason);

    // The monoid's inputs, by name, are q, k and v.
    llvm::SmallVector<Value> inputs;
    for (const MonoidSlot &slot : spec->inputs) {
      int which = slot.name == "q"   ? 0
                  : slot.name == "k" ? 1
                  : slot.name == "v" ? 2
                                     : -1;
      if (which < 0)
        return fail(op, "monoid input '" + slot.name + "' is not q, k or v");
      inputs.push_back(operands[which]);
    }
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type outType = attention.getOutput().getType();
    // The cotangents: of the output, then of each final state tensor.
    BlockArgument cotangent = body.addArgument(outType, loc);
    llvm::SmallVector<Value> finalCotangents;
    for (Value state : attention.getFinalState())
      finalCotangents.push_back(body.addArgument(state.getType(), loc));
    auto eps = op->getAttrOfType<FloatAttr>("eps");
    llvm::SmallVector<Type> gradientTypes;
    for (Value v : llvm::concat<Value>(inputs, initial))
      gradientTypes.push_back(v.getType());
    auto vjp = PrefixVjpOp::create(b, loc, gradientTypes,
                                   MonoidAttr::get(op->getContext(), *spec),
                                   inputs, initial, cotangent, finalCotangents,
                                   eps ? eps : b.getF64FloatAttr(1e-6));
    // Gradients in argument order.
    llvm::SmallVector<Value> gradients(argumentOf.size());
    for (auto [i, input] :
         llvm::enumerate(llvm::concat<Value>(inputs, initial)))
      gradients[cast<BlockArgument>(input).getArgNumber()] =
          vjp.getGradients()[i];
    b.setInsertionPoint(ret);
    func::ReturnOp::create(b, loc, gradients);
    ret.erase();
    op->erase();
    llvm::SmallVector<Type> argumentTypes(body.getArgumentTypes());
    llvm::SmallVector<Type> resultTypes;
    for (Value g : gradients)
      resultTypes.push_back(g.getType());
    func.setFunctionType(b.getFunctionType(argumentTypes, resultTypes));
    return success();
  }

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>(function);
    if (!func || func.isExternal()) {
      getOperation().emitError()
          << "hla-derive-vjp: no function @" << function << " with a body";
      return signalPassFailure();
    }
    if (failed(derive(func)))
      signalPassFailure();
  }
};

} // namespace
