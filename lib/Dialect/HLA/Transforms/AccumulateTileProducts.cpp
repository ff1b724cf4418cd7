//===- AccumulateTileProducts.cpp - Sums of products as accumulations ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-accumulate-tile-products (Passes.td): a product added in a sum starts
// from the rest of the sum instead of from zero, so that it accumulates into
// the same tile: `X + A·B` with `P = 0 + A·B` becomes `P' = X + A·B`; a
// sum of two products inside a longer expression, `f(C·D + A·B)`, becomes
// `f(P')` the same way.
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

/// `op`'s block arguments mapped to `args`, the block arguments of a copy
/// of `op` without input `dropped` (its inputs in order, then its output).
IRMapping argumentsWithout(linalg::GenericOp op, unsigned dropped,
                           ValueRange args) {
  Block *body = op.getBody();
  IRMapping mapping;
  unsigned next = 0;
  for (unsigned i = 0; i < op.getNumDpsInputs(); ++i)
    if (i != dropped)
      mapping.map(body->getArgument(i), args[next++]);
  mapping.map(body->getArgument(op.getNumDpsInputs()), args.back());
  return mapping;
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
        IRMapping mapping = argumentsWithout(op, dropped, args);
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

/// An addition inside an elementwise generic of two of its input tiles
/// (no longer sum), both products, one of them from zero, where the sum is not
/// what the generic yields (AccumulateProductTerm takes those): that product
/// accumulates into the other and the generic reads the accumulation in
/// place of the sum. `f(C·D + A·B)` becomes `f(P')`, P' = C·D + A·B; where
/// both products start from zero, the later accumulates into the earlier.
struct AccumulateInnerProduct : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || op->getNumResults() != 1 ||
        op.getNumDpsInits() != 1 ||
        op.getNumLoops() != op.getNumParallelLoops())
      return failure();
    Block *body = op.getBody();
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    Value yielded = body->getTerminator()->getOperand(0);
    if (auto trunc = yielded.getDefiningOp<arith::TruncFOp>())
      yielded = trunc.getIn();
    // The input read by `v` if it is a tile read in the output's order
    // and nowhere else in the body.
    auto tileOf = [&](Value v) -> OpOperand * {
      auto argument = dyn_cast<BlockArgument>(v);
      if (!argument || argument.getOwner() != body ||
          argument.getArgNumber() >= op.getNumDpsInputs() ||
          !argument.hasOneUse())
        return nullptr;
      OpOperand *input = op.getDpsInputOperand(argument.getArgNumber());
      return op.getMatchingIndexingMap(input) == outMap ? input : nullptr;
    };
    // Into another product only: a tile the sum would compute on demand
    // would otherwise be made whole ahead of the product, alive across it.
    auto accumulates = [&](OpOperand *product, OpOperand *into) {
      Value tile = product->get();
      auto other = into->get().getDefiningOp<linalg::GenericOp>();
      return isLoneProductFromZero(tile, op) && other &&
             linalg::isaContractionOpInterface(other) &&
             tile.getType() == into->get().getType() &&
             getElementTypeOrSelf(tile.getType()) ==
                 op.getMatchingBlockArgument(product).getType();
    };
    for (Operation &inner : body->without_terminator()) {
      // A sum of two terms only: a longer one is left as it is (KDA's
      // chunk, with two of its three products chained, spilled 16 bytes
      // more at 32 value columns).
      auto addition = dyn_cast<arith::AddFOp>(&inner);
      if (!addition || addition.getResult() == yielded ||
          llvm::any_of(addition->getUsers(), llvm::IsaPred<arith::AddFOp>) ||
          addition.getLhs().getDefiningOp<arith::AddFOp>() ||
          addition.getRhs().getDefiningOp<arith::AddFOp>())
        continue;
      OpOperand *lhs = tileOf(addition.getLhs());
      OpOperand *rhs = tileOf(addition.getRhs());
      if (!lhs || !rhs || lhs->get() == rhs->get())
        continue;
      // The later of two products accumulates into the earlier.
      OpOperand *product = rhs, *into = lhs;
      bool rhsFirst = accumulates(rhs, lhs), lhsFirst = accumulates(lhs, rhs);
      if (lhsFirst && rhsFirst) {
        Operation *l = lhs->get().getDefiningOp();
        Operation *r = rhs->get().getDefiningOp();
        if (l->getBlock() == r->getBlock() && r->isBeforeInBlock(l))
          std::swap(product, into);
      } else if (lhsFirst) {
        std::swap(product, into);
      } else if (!rhsFirst) {
        continue;
      }
      auto contraction = product->get().getDefiningOp<linalg::GenericOp>();
      rewriter.setInsertionPoint(op);
      auto accumulated = cast<linalg::GenericOp>(rewriter.clone(*contraction));
      accumulated.getDpsInitOperand(0)->set(into->get());
      // The generic without the tile added into the product.
      unsigned dropped = into->getOperandNumber();
      unsigned productIndex = product->getOperandNumber();
      llvm::SmallVector<Value> inputs;
      llvm::SmallVector<AffineMap> maps;
      for (OpOperand *input : op.getDpsInputOperands()) {
        if (input->getOperandNumber() == dropped)
          continue;
        inputs.push_back(input->getOperandNumber() == productIndex
                             ? accumulated.getResult(0)
                             : input->get());
        maps.push_back(op.getMatchingIndexingMap(input));
      }
      maps.push_back(outMap);
      Value productArgument = op.getMatchingBlockArgument(product);
      auto rewritten = linalg::GenericOp::create(
          rewriter, op.getLoc(), op->getResultTypes(), inputs,
          ValueRange{op.getDpsInitOperand(0)->get()}, maps,
          op.getIteratorTypesArray(),
          [&](OpBuilder &b, Location, ValueRange args) {
            IRMapping mapping = argumentsWithout(op, dropped, args);
            for (Operation &cloned : *body) {
              if (&cloned == addition.getOperation())
                mapping.map(addition.getResult(),
                            mapping.lookup(productArgument));
              else
                b.clone(cloned, mapping);
            }
          });
      rewriter.replaceOp(op, rewritten.getResults());
      rewriter.eraseOp(contraction);
      return success();
    }
    return failure();
  }
};

struct HLAAccumulateTileProductsPass
    : public hla::impl::HLAAccumulateTileProductsPassBase<
          HLAAccumulateTileProductsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AccumulateProductTerm, AccumulateInnerProduct>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
