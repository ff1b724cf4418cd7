//===- SplitTileSums.cpp - Sums of tiles as chains of additions -----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-split-tile-sums (Passes.td): an elementwise generic yielding a sum of
// three or more terms gives up its last term that reads a product, which a
// generic of its own adds to the rest: `a + b + c·P` becomes
// `s = a + b; s + c·P`. Repeated, the sum is a chain of additions, one term
// each, so that the register tiles' order can add a term as soon as its
// product is there.
//
//===----------------------------------------------------------------------===//

#include "TransformUtils.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLASPLITTILESUMSPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// A term of a sum: its value in the body and the addition adding it.
struct SumTerm {
  Value value;
  arith::AddFOp addition;
};

/// The leaves of the tree of additions under `root` whose inner additions
/// have no other reader, left to right.
void collectTerms(Value root, llvm::SmallVectorImpl<SumTerm> &terms) {
  auto addition = root.getDefiningOp<arith::AddFOp>();
  for (Value side : {addition.getLhs(), addition.getRhs()}) {
    auto inner = side.getDefiningOp<arith::AddFOp>();
    if (inner && side.hasOneUse())
      collectTerms(side, terms);
    else
      terms.push_back({side, addition});
  }
}

/// The ops of `body` that compute `term` and nothing else: its backward
/// slice in the body, when no op of it has a reader outside it.
std::optional<llvm::SetVector<Operation *>> termSlice(Block *body,
                                                      SumTerm term) {
  llvm::SetVector<Operation *> slice;
  Operation *def = term.value.getDefiningOp();
  if (!def || def->getBlock() != body)
    return slice; // a block argument or a value from outside
  BackwardSliceOptions options;
  options.filter = [&](Operation *op) { return op->getBlock() == body; };
  options.inclusive = true;
  if (failed(getBackwardSlice(def, &slice, options)))
    return std::nullopt;
  for (Operation *op : slice)
    for (Operation *user : op->getUsers())
      if (!slice.contains(user) && user != term.addition)
        return std::nullopt;
  return slice;
}

/// The body arguments the ops `slice` (or the value `term`) read.
llvm::SetVector<BlockArgument>
argumentsRead(Block *body, const llvm::SetVector<Operation *> &slice,
              Value term) {
  llvm::SetVector<BlockArgument> read;
  auto note = [&](Value v) {
    if (auto argument = dyn_cast<BlockArgument>(v);
        argument && argument.getOwner() == body)
      read.insert(argument);
  };
  note(term);
  for (Operation *op : slice)
    for (Value operand : op->getOperands())
      note(operand);
  return read;
}

/// Whether `tile` is the result of a contraction.
bool isProduct(Value tile) {
  auto product = tile.getDefiningOp<linalg::GenericOp>();
  return product && linalg::isaContractionOpInterface(product);
}

struct SplitLastProductTerm : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ElementwiseYield> yield = matchElementwiseYield(op);
    if (!yield || !yield->sum.getDefiningOp<arith::AddFOp>())
      return failure();
    Value sum = yield->sum;
    Operation *truncation = yield->truncation;
    Block *body = op.getBody();
    llvm::SmallVector<SumTerm> terms;
    collectTerms(sum, terms);
    if (terms.size() < 3)
      return failure();
    // The last term that reads a product and that only its own ops compute.
    for (const SumTerm &term : llvm::reverse(terms)) {
      std::optional<llvm::SetVector<Operation *>> slice = termSlice(body, term);
      if (!slice)
        continue;
      llvm::SetVector<BlockArgument> read =
          argumentsRead(body, *slice, term.value);
      if (llvm::none_of(read, [&](BlockArgument argument) {
            return argument.getArgNumber() < op.getNumDpsInputs() &&
                   isProduct(
                       op.getDpsInputOperand(argument.getArgNumber())->get());
          }))
        continue;
      rewrite(op, term, *slice, read, sum, truncation, rewriter);
      return success();
    }
    return failure();
  }

private:
  /// `op` as `rest + term`: `rest` the generic without the term's ops,
  /// reading the inputs it still needs.
  static void rewrite(linalg::GenericOp op, SumTerm term,
                      const llvm::SetVector<Operation *> &slice,
                      const llvm::SetVector<BlockArgument> &termArgs, Value sum,
                      Operation *truncation, PatternRewriter &rewriter) {
    Block *body = op.getBody();
    Location loc = op.getLoc();
    unsigned numInputs = op.getNumDpsInputs();
    Value other = term.addition.getLhs() == term.value ? term.addition.getRhs()
                                                       : term.addition.getLhs();
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    auto shape = cast<RankedTensorType>(op.getResult(0).getType()).getShape();
    auto sumType = RankedTensorType::get(shape, sum.getType());
    rewriter.setInsertionPoint(op);

    // The rest: every op but the term's, the term's addition yielding the
    // other side; only the inputs those ops read.
    llvm::SmallVector<Operation *> restOps;
    llvm::SetVector<BlockArgument> restArgs;
    for (Operation &inner : body->without_terminator()) {
      if (slice.contains(&inner) || &inner == truncation)
        continue;
      restOps.push_back(&inner);
      for (Value operand : inner.getOperands())
        if (auto argument = dyn_cast<BlockArgument>(operand);
            argument && argument.getOwner() == body &&
            &inner != term.addition.getOperation())
          restArgs.insert(argument);
    }
    if (auto argument = dyn_cast<BlockArgument>(other);
        argument && argument.getOwner() == body)
      restArgs.insert(argument);
    // The old body's arguments `args` (inputs only) to the new body's,
    // from its argument `first` on.
    auto mapInputs = [&](IRMapping &mapping,
                         const llvm::SetVector<BlockArgument> &args,
                         ValueRange newArgs, unsigned first) {
      for (BlockArgument argument : args)
        if (argument.getArgNumber() < numInputs)
          mapping.map(argument, newArgs[first++]);
    };
    auto sub = [&](const llvm::SetVector<BlockArgument> &args,
                   llvm::SmallVectorImpl<Value> &inputs,
                   llvm::SmallVectorImpl<AffineMap> &maps) {
      for (BlockArgument argument : args) {
        if (argument.getArgNumber() >= numInputs)
          continue;
        OpOperand *input = op.getDpsInputOperand(argument.getArgNumber());
        inputs.push_back(input->get());
        maps.push_back(op.getMatchingIndexingMap(input));
      }
    };
    llvm::SmallVector<Value> restInputs;
    llvm::SmallVector<AffineMap> restMaps;
    sub(restArgs, restInputs, restMaps);
    restMaps.push_back(outMap);
    Value restInit =
        tensor::EmptyOp::create(rewriter, loc, shape, sumType.getElementType());
    auto rest = linalg::GenericOp::create(
        rewriter, loc, TypeRange{sumType}, restInputs, ValueRange{restInit},
        restMaps, op.getIteratorTypesArray(),
        [&](OpBuilder &b, Location nested, ValueRange args) {
          IRMapping mapping;
          mapInputs(mapping, restArgs, args, 0);
          for (Operation *inner : restOps) {
            if (inner == term.addition.getOperation())
              mapping.map(inner->getResult(0), mapping.lookupOrDefault(other));
            else
              b.clone(*inner, mapping);
          }
          linalg::YieldOp::create(b, nested, mapping.lookupOrDefault(sum));
        });

    // rest + term (then the truncation), into op's own output.
    llvm::SmallVector<Value> inputs = {rest.getResult(0)};
    llvm::SmallVector<AffineMap> maps = {outMap};
    sub(termArgs, inputs, maps);
    maps.push_back(outMap);
    auto added = linalg::GenericOp::create(
        rewriter, loc, op->getResultTypes(), inputs,
        ValueRange{op.getDpsInitOperand(0)->get()}, maps,
        op.getIteratorTypesArray(),
        [&](OpBuilder &b, Location nested, ValueRange args) {
          IRMapping mapping;
          mapInputs(mapping, termArgs, args, 1);
          for (Operation &inner : body->without_terminator())
            if (slice.contains(&inner))
              b.clone(inner, mapping);
          Value total = arith::AddFOp::create(
              b, nested, args[0], mapping.lookupOrDefault(term.value),
              term.addition.getFastmathAttr());
          if (truncation) {
            mapping.map(sum, total);
            total = b.clone(*truncation, mapping)->getResult(0);
          }
          linalg::YieldOp::create(b, nested, total);
        });
    rewriter.replaceOp(op, added.getResult(0));
  }
};

struct HLASplitTileSumsPass
    : public hla::impl::HLASplitTileSumsPassBase<HLASplitTileSumsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitLastProductTerm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
