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
// Grouped heads: query head h reads key/value head h / G (G = H_q / H_kv),
// and every state is per query head, so the op is the same op on k and v
// (KDA: and g, beta) repeated G times along the heads. The backward is that
// op's, with the gradients of the repeated operands summed over each group
// (in f32). A `head_decay` tensor is an argument too: its gradient comes
// last from the prefix_vjp (per query head, no group sums).
//
// LinSimp becomes an hla.anchor_vjp instead (favor kernel: its readout
// reads a window of anchors (r, u) and the key features φ(k) with Ω), so the
// gradient is of q, k, v, r, u, Ω and the initial state; its exact kernel an
// hla.linsimp_exact_vjp (no state, and Ω, which it does not read, gets
// zeros).
//
//===----------------------------------------------------------------------===//

#include "TransformUtils.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLADERIVEVJPPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// [B, T, H_kv(, D)] as [B, T, H_kv, G(, D)] and back: heads g·G ..
/// g·G + G - 1 are group g.
llvm::SmallVector<ReassociationIndices> groupedHeads(int64_t rank) {
  llvm::SmallVector<ReassociationIndices> groups = {{0}, {1}, {2, 3}};
  if (rank == 4)
    groups.push_back({4});
  return groups;
}

/// `shape` [B, T, H, ...] with the heads split as [H / G, G].
llvm::SmallVector<int64_t> splitHeads(llvm::ArrayRef<int64_t> shape,
                                      int64_t groups) {
  llvm::SmallVector<int64_t> split = {shape[0], shape[1], shape[2] / groups,
                                      groups};
  llvm::append_range(split, shape.drop_front(3));
  return split;
}

/// `x` [B, T, H_kv(, D)] repeated to [B, T, H_kv·G(, D)]: head h is x's
/// head h / G.
Value repeatHeads(OpBuilder &b, Location loc, Value x, int64_t groups) {
  auto type = cast<RankedTensorType>(x.getType());
  llvm::SmallVector<int64_t> repeated(type.getShape());
  repeated[2] *= groups;
  Value spread = tensor::EmptyOp::create(b, loc, splitHeads(repeated, groups),
                                         type.getElementType());
  spread = linalg::BroadcastOp::create(b, loc, x, spread, {3})->getResult(0);
  return tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get(repeated, type.getElementType()), spread,
      groupedHeads(type.getRank()));
}

/// The gradient `grad` [B, T, H_kv·G(, D)] of a repeated input, summed over
/// each group's G heads in f32: the gradient [B, T, H_kv(, D)] of the input.
Value sumHeadGroups(OpBuilder &b, Location loc, Value grad, int64_t groups) {
  auto type = cast<RankedTensorType>(grad.getType());
  int64_t rank = type.getRank();
  Type element = type.getElementType(), f32 = b.getF32Type();
  llvm::SmallVector<int64_t> grouped = splitHeads(type.getShape(), groups);
  llvm::SmallVector<int64_t> summed(type.getShape());
  summed[2] /= groups;
  Value split = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(grouped, element), grad,
      groupedHeads(rank));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  Value empty = tensor::EmptyOp::create(b, loc, summed, f32);
  Value sum =
      linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
          .getResult(0);
  MLIRContext *ctx = b.getContext();
  AffineMap all = AffineMap::getMultiDimIdentityMap(rank + 1, ctx);
  AffineMap dropGroup = all.dropResult(3);
  llvm::SmallVector<utils::IteratorType> iterators(
      rank + 1, utils::IteratorType::parallel);
  iterators[3] = utils::IteratorType::reduction;
  sum = linalg::GenericOp::create(
            b, loc, sum.getType(), split, sum, {all, dropGroup}, iterators,
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value x = args[0];
              if (x.getType() != f32)
                x = arith::ExtFOp::create(nb, l, f32, x);
              linalg::YieldOp::create(
                  nb, l, ValueRange{arith::AddFOp::create(nb, l, args[1], x)});
            })
            .getResult(0);
  if (element == f32)
    return sum;
  AffineMap same = AffineMap::getMultiDimIdentityMap(rank, ctx);
  return linalg::GenericOp::create(
             b, loc, RankedTensorType::get(summed, element), sum,
             tensor::EmptyOp::create(b, loc, summed, element).getResult(),
             {same, same},
             llvm::SmallVector<utils::IteratorType>(
                 rank, utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l,
                                       ValueRange{arith::TruncFOp::create(
                                           nb, l, element, args[0])});
             })
      .getResult(0);
}

/// `func` returns `gradients` instead of `op`'s results (`op` is erased),
/// and takes the cotangents added to its body's arguments.
void returnGradients(func::FuncOp func, Operation *op,
                     llvm::ArrayRef<Value> gradients) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc(), gradients);
  ret.erase();
  op->erase();
  llvm::SmallVector<Type> resultTypes;
  for (Value g : gradients)
    resultTypes.push_back(g.getType());
  func.setFunctionType(b.getFunctionType(body.getArgumentTypes(), resultTypes));
}

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
    auto linsimp = dyn_cast<LinSimpOp>(op);
    if (!isa<LinearAttentionOp, HLA2Op, AHLAOp, HLA3Op, KDAOp, LinSimpOp>(op))
      return fail(op, "the backward of '" + op->getName().getStringRef() +
                          "' is not derived yet (linear_attention, hla2, "
                          "ahla, hla3, linsimp and kda are)");
    // The token operands, by the monoid's input names.
    llvm::SmallVector<std::pair<llvm::StringRef, Value>> named = {
        {"q", attention.getQuery()},
        {"k", attention.getKey()},
        {"v", attention.getValue()}};
    if (auto kda = dyn_cast<KDAOp>(op))
      named.append({{"g", kda.getG()}, {"beta", kda.getBeta()}});
    if (linsimp)
      named.append(
          {{"r", linsimp.getAnchorKey()}, {"u", linsimp.getAnchorValue()}});
    llvm::SmallVector<Value> operands;
    for (auto &entry : named)
      operands.push_back(entry.second);
    ValueRange initial = attention.getInitialState();
    // The decay's rates per head (LinSimp: its feature matrix),
    // differentiated too.
    llvm::SmallVector<Value> rates;
    if (Value headDecay = getHeadDecay(op))
      rates.push_back(headDecay);
    if (linsimp)
      rates.push_back(linsimp.getOmega());
    llvm::SmallVector<unsigned> argumentOf;
    for (Value v : llvm::concat<Value>(operands, initial, rates)) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &body)
        return fail(op, "the op's tensors and the initial state must be "
                        "arguments of @" +
                            func.getName());
      if (llvm::is_contained(argumentOf, arg.getArgNumber()))
        return fail(op, "the op's tensors and the initial state must be "
                        "different arguments (one argument's gradient would "
                        "be a sum)");
      argumentOf.push_back(arg.getArgNumber());
    }
    if (func.getNumArguments() != argumentOf.size())
      return fail(func, "@" + func.getName() +
                            " must take exactly the op's tensors and the "
                            "initial state as arguments");
    auto query = cast<RankedTensorType>(operands[0].getType());
    auto key = cast<RankedTensorType>(operands[1].getType());
    int64_t groups = 1;
    if (query.getDimSize(2) != key.getDimSize(2)) {
      if (!query.hasStaticShape() || !key.hasStaticShape() ||
          !cast<RankedTensorType>(operands[2].getType()).hasStaticShape())
        return fail(op, "grouped K/V heads need static shapes");
      groups = query.getDimSize(2) / key.getDimSize(2);
    }
    if (linsimp && linsimp.getKernel() == FeatureKernel::exact)
      return deriveLinSimp(linsimp, nullptr, operands, groups, argumentOf);
    std::string reason;
    FailureOr<MonoidSpec> spec = getAttentionMonoid(op, reason);
    if (failed(spec))
      return fail(op, reason);
    if (linsimp)
      return deriveLinSimp(linsimp, &*spec, operands, groups, argumentOf);

    // The monoid's inputs, by name (`arguments`; all but q repeated to the
    // query heads in `inputs`).
    llvm::SmallVector<Value> arguments;
    for (const MonoidSlot &slot : spec->inputs) {
      auto *it = llvm::find_if(
          named, [&](auto &entry) { return entry.first == slot.name; });
      if (it == named.end())
        return fail(op, "monoid input '" + slot.name + "' is no operand");
      arguments.push_back(it->second);
    }
    OpBuilder b(op);
    Location loc = op->getLoc();
    llvm::SmallVector<Value> inputs;
    for (Value argument : arguments)
      inputs.push_back(groups > 1 && argument != operands[0]
                           ? repeatHeads(b, loc, argument, groups)
                           : argument);
    Type outType = attention.getOutput().getType();
    // The cotangents: of the output, then of each final state tensor.
    BlockArgument cotangent = body.addArgument(outType, loc);
    llvm::SmallVector<Value> finalCotangents;
    for (Value state : attention.getFinalState())
      finalCotangents.push_back(body.addArgument(state.getType(), loc));
    auto eps = op->getAttrOfType<FloatAttr>("eps");
    llvm::SmallVector<Type> gradientTypes;
    for (Value v : llvm::concat<Value>(inputs, initial, rates))
      gradientTypes.push_back(v.getType());
    if (!rates.empty())
      emitHeadDecayCheck(b, loc, rates.front());
    auto vjp = PrefixVjpOp::create(b, loc, gradientTypes,
                                   MonoidAttr::get(op->getContext(), *spec),
                                   inputs, initial, cotangent, finalCotangents,
                                   rates, eps ? eps : b.getF64FloatAttr(1e-6));
    // Gradients in argument order.
    llvm::SmallVector<Value> gradients(argumentOf.size());
    for (auto [i, argument] :
         llvm::enumerate(llvm::concat<Value>(arguments, initial, rates))) {
      Value gradient = vjp.getGradients()[i];
      if (i < inputs.size() && inputs[i] != argument)
        gradient = sumHeadGroups(b, loc, gradient, groups);
      gradients[cast<BlockArgument>(argument).getArgNumber()] = gradient;
    }
    returnGradients(func, op, gradients);
    return success();
  }

  /// LinSimp: the gradients of q, k, v, r, u, Ω and the initial state. The
  /// favor kernel's (`spec`: its monoid) are an hla.anchor_vjp's; the exact
  /// kernel's (no state; Ω unused, its gradient zero) an
  /// hla.linsimp_exact_vjp's.
  LogicalResult deriveLinSimp(LinSimpOp op, const MonoidSpec *spec,
                              llvm::ArrayRef<Value> operands, int64_t groups,
                              llvm::ArrayRef<unsigned> argumentOf) {
    auto func = op->getParentOfType<func::FuncOp>();
    Block &body = func.getBody().front();
    OpBuilder b(op);
    Location loc = op.getLoc();
    // Every token operand but q repeated to the query heads.
    llvm::SmallVector<Value> inputs;
    for (Value operand : operands)
      inputs.push_back(groups > 1 && operand != operands[0]
                           ? repeatHeads(b, loc, operand, groups)
                           : operand);
    ValueRange initial = op.getInitialState();
    BlockArgument cotangent = body.addArgument(op.getOutput().getType(), loc);
    llvm::SmallVector<Value> finalCotangents;
    for (Value state : op.getFinalState())
      finalCotangents.push_back(body.addArgument(state.getType(), loc));
    llvm::SmallVector<Type> gradientTypes;
    for (Value v : inputs)
      gradientTypes.push_back(v.getType());
    gradientTypes.push_back(op.getOmega().getType());
    for (Value v : initial)
      gradientTypes.push_back(v.getType());
    llvm::SmallVector<Value> results;
    FloatAttr scale = b.getF64FloatAttr(op.getEffectiveScale());
    if (spec) {
      auto vjp = AnchorVjpOp::create(
          b, loc, gradientTypes, MonoidAttr::get(op->getContext(), *spec),
          inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], op.getOmega(),
          initial, cotangent, finalCotangents, op.getWindowAttr(), scale);
      llvm::append_range(results, vjp.getGradients());
    } else {
      auto vjp = LinSimpExactVjpOp::create(
          b, loc, TypeRange(gradientTypes).take_front(5), inputs[0], inputs[1],
          inputs[2], inputs[3], inputs[4], cotangent, op.getWindowAttr(),
          scale);
      llvm::append_range(results, vjp->getResults());
      auto omegaType = cast<RankedTensorType>(op.getOmega().getType());
      Value zero = arith::ConstantOp::create(
          b, loc, b.getFloatAttr(omegaType.getElementType(), 0.0));
      results.push_back(linalg::FillOp::create(b, loc, zero,
                                               Value(tensor::EmptyOp::create(
                                                   b, loc, omegaType.getShape(),
                                                   omegaType.getElementType())))
                            .getResult(0));
    }
    // Gradients in argument order (argumentOf: the token operands, the
    // initial state, then Ω).
    llvm::SmallVector<Value> gradients(argumentOf.size());
    size_t numTokens = operands.size(), numInitial = initial.size();
    for (auto [i, argument] : llvm::enumerate(operands)) {
      Value gradient = results[i];
      if (inputs[i] != argument)
        gradient = sumHeadGroups(b, loc, gradient, groups);
      gradients[argumentOf[i]] = gradient;
    }
    for (size_t i = 0; i < numInitial; ++i)
      gradients[argumentOf[numTokens + i]] = results[numTokens + 1 + i];
    gradients[argumentOf[numTokens + numInitial]] = results[numTokens];
    returnGradients(func, op, gradients);
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
