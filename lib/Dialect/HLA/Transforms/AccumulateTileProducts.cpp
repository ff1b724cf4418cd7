//===- AccumulateTileProducts.cpp - Sums of products as accumulations ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-accumulate-tile-products (Passes.td): a product added in a sum starts
// from the rest of the sum instead of from zero, so that it accumulates into
// the same tile: `X + A·B` with `P = 0 + A·B` becomes `P' = X + A·B`.
//
//===----------------------------------------------------------------------===//

#include "TransformUtils.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAACCUMULATETILEPRODUCTSPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// Whether `value` is a contraction `0 + A·B` on tensors that only `user`
/// reads: its zero start can be replaced by another tile.
bool isLoneProductFromZero(Value value, Operation *user) {
  auto product = value.getDefiningOp<linalg::GenericOp>();
  if (!product || !product.hasPureTensorSemantics() ||
      product->getNumResults() != 1 || !value.hasOneUse() ||
      *value.getUsers().begin() != user ||
      !linalg::isaContractionOpInterface(product))
    return false;
  auto fill =
      product.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// A term of a sum: the block argument added, and the addition adding it.
struct AddedTerm {
  BlockArgument argument;
  arith::AddFOp addition;
};

/// The terms of the sum `root` that are block arguments of `op`'s inputs
/// read in the output's order and nowhere else: leaves of the tree of
/// additions under `root` whose inner additions have no other reader.
void collectTerms(linalg::GenericOp op, Value root,
                  llvm::SmallVectorImpl<AddedTerm> &terms) {
  auto addition = root.getDefiningOp<arith::AddFOp>();
  if (!addition)
    return;
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  for (Value side : {addition.getLhs(), addition.getRhs()}) {
    auto argument = dyn_cast<BlockArgument>(side);
    if (argument && argument.getOwner() == op.getBody() &&
        argument.getArgNumber() < op.getNumDpsInputs() &&
        argument.hasOneUse() &&
        op.getMatchingIndexingMap(
            op.getDpsInputOperand(argument.getArgNumber())) == outMap) {
      terms.push_back({argument, addition});
      continue;
    }
    if (side.hasOneUse())
      collectTerms(op, side, terms);
  }
}

/// X: `op`'s sum without `term` (whose addition yields `other` instead),
/// in `type`, before any cast. A sum of only the term and one input tile
/// read in the output's order is that tile.
Value restOfSum(linalg::GenericOp op, AddedTerm term, Value other, Value sum,
                Operation *truncation, RankedTensorType type,
                PatternRewriter &rewriter) {
  Block *body = op.getBody();
  unsigned dropped = term.argument.getArgNumber();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (auto argument = dyn_cast<BlockArgument>(other);
      argument && term.addition.getResult() == sum &&
      argument.getOwner() == body &&
      argument.getArgNumber() < op.getNumDpsInputs()) {
    OpOperand *input = op.getDpsInputOperand(argument.getArgNumber());
    if (op.getMatchingIndexingMap(input) == outMap &&
        input->get().getType() == type)
      return input->get();
  }
  llvm::SmallVector<Value> inputs;
  llvm::SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (input->getOperandNumber() == dropped)
      continue;
    inputs.push_back(input->get());
    maps.push_back(op.getMatchingIndexingMap(input));
  }
  maps.push_back(outMap);
  Location loc = op.getLoc();
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
  auto rest = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, inputs, ValueRange{empty}, maps,
      op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location nested, ValueRange args) {
        IRMapping mapping;
        unsigned next = 0;
        for (unsigned i = 0; i < op.getNumDpsInputs(); ++i)
          if (i != dropped)
            mapping.map(body->getArgument(i), args[next++]);
        mapping.map(body->getArgument(op.getNumDpsInputs()), args.back());
        for (Operation &inner : body->without_terminator()) {
          if (&inner == term.addition.getOperation())
            mapping.map(inner.getResult(0), mapping.lookupOrDefault(other));
          else if (&inner != truncation)
            b.clone(inner, mapping);
        }
        linalg::YieldOp::create(b, nested, mapping.lookupOrDefault(sum));
      });
  return rest.getResult(0);
}

/// An elementwise generic `f(X + P)` whose P is a product from zero, with f
/// nothing or one truncation, becomes `f(P')` with P' the product
/// accumulating into X (the generic without that term).
struct AccumulateProductTerm : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ElementwiseYield> yield = matchElementwiseYield(op);
    if (!yield)
      return failure();
    Value sum = yield->sum;
    Operation *truncation = yield->truncation;
    llvm::SmallVector<AddedTerm> terms;
    collectTerms(op, sum, terms);
    auto term = llvm::find_if(terms, [&](const AddedTerm &t) {
      Value tile = op.getDpsInputOperand(t.argument.getArgNumber())->get();
      return isLoneProductFromZero(tile, op) &&
             getElementTypeOrSelf(tile.getType()) == sum.getType();
    });
    if (term == terms.end())
      return failure();
    auto product = op.getDpsInputOperand(term->argument.getArgNumber())
                       ->get()
                       .getDefiningOp<linalg::GenericOp>();
    auto type = cast<RankedTensorType>(product.getResult(0).getType());
    Value other = term->addition.getLhs() == term->argument
                      ? term->addition.getRhs()
                      : term->addition.getLhs();
    rewriter.setInsertionPoint(op);
    Value rest = restOfSum(op, *term, other, sum, truncation, type, rewriter);
    auto accumulated = cast<linalg::GenericOp>(rewriter.clone(*product));
    accumulated.getDpsInitOperand(0)->set(rest);
    Value result = accumulated.getResult(0);
    if (truncation) {
      AffineMap identity = rewriter.getMultiDimIdentityMap(op.getNumLoops());
      result =
          linalg::GenericOp::create(
              rewriter, op.getLoc(), op->getResultTypes(), ValueRange{result},
              ValueRange{op.getDpsInitOperand(0)->get()},
              llvm::ArrayRef<AffineMap>{identity, identity},
              op.getIteratorTypesArray(),
              [&](OpBuilder &b, Location nested, ValueRange args) {
                IRMapping mapping;
                mapping.map(sum, args[0]);
                linalg::YieldOp::create(
                    b, nested, b.clone(*truncation, mapping)->getResult(0));
              })
              .getResult(0);
    }
    rewriter.replaceOp(op, result);
    rewriter.eraseOp(product);
    return success();
  }
};

struct HLAAccumulateTileProductsPass
    : public hla::impl::HLAAccumulateTileProductsPassBase<
          HLAAccumulateTileProductsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AccumulateProductTerm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
