//===- FuseTileElementwise.cpp - Fuse elementwise tile chains ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-fuse-tile-elementwise: upstream's elementwise fusion, restricted to
// consumers whose loops are all parallel, with filled outputs read as their
// fill value (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "TransformUtils.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAFUSETILEELEMENTWISEPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;

namespace {
/// An elementwise generic reading an output that a linalg.fill made reads
/// the fill's scalar instead. Each element of such an output is written
/// once, from its initial value, so the two are the same; but upstream's
/// fusion keeps a producer's result as a result of the fused op whenever the
/// producer's body reads its output (that operand must survive the
/// fusion), and those results, read by nobody, stay alive as whole tiles
/// (on register tiles, 32 registers a thread each for a 64 x 64 f32 tile).
struct ReadFilledOutputAsScalar : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumLoops() != op.getNumParallelLoops() ||
        !op.hasPureTensorSemantics())
      return failure();
    bool changed = false;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      auto fill = init.get().getDefiningOp<linalg::FillOp>();
      BlockArgument arg = op.getMatchingBlockArgument(&init);
      if (!fill || arg.use_empty() ||
          !op.getMatchingIndexingMap(&init).isPermutation())
        continue;
      Value scalar = fill.getInputs()[0];
      if (scalar.getType() != arg.getType())
        continue;
      rewriter.modifyOpInPlace(op, [&] { arg.replaceAllUsesWith(scalar); });
      changed = true;
    }
    return success(changed);
  }
};

/// Whether linalg op `op` reads a 2-D tile and does more than cast it.
bool readsTileArithmetically(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || llvm::none_of(linalgOp.getDpsInputs(), [](Value input) {
        auto type = dyn_cast<RankedTensorType>(input.getType());
        return type && type.getRank() == 2;
      }))
    return false;
  return llvm::any_of(op->getRegion(0).front().without_terminator(),
                      [](Operation &inner) {
                        return !isa<arith::ExtFOp, arith::TruncFOp>(inner);
                      });
}

struct HLAFuseTileElementwisePass
    : public hla::impl::HLAFuseTileElementwisePassBase<
          HLAFuseTileElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      Operation *producer = fused->get().getDefiningOp();
      // Into elementwise consumers only, and only producers nobody else
      // reads (otherwise the producer's work would be done twice).
      if (!consumer ||
          consumer.getNumLoops() != consumer.getNumParallelLoops() ||
          !producer || !producer->hasOneUse())
        return false;
      // Arithmetic on a tile that a loop does not change stays outside it,
      // done once (LinSimp's scaled queries, read by every anchor offset);
      // a cast alone still fuses (a tile read on demand converts as it is
      // read), as does what is made of indices alone (masks).
      if (hla::isInLoopOutside(consumer, producer) &&
          readsTileArithmetically(producer))
        return false;
      // A producer that reads its output keeps it as a result of the fused
      // op, indexed as the consumer reads it: where the consumer broadcasts
      // it (a row vector into a tile), every iteration of the broadcast
      // dimension would update that element again (read it, add, write it
      // back). On the GPU, a race: LinSimp's bf16 gradients (the exponent's
      // half norm) came out 1-3e-2 off, differing run to run (H100,
      // 2026-12-07). Such producers wait until ReadFilledOutputAsScalar
      // has made them pure, or stay apart.
      auto producerOp = dyn_cast<linalg::LinalgOp>(producer);
      bool readsOutput =
          producerOp &&
          llvm::any_of(producerOp.getDpsInitsMutable(), [&](OpOperand &init) {
            return producerOp.payloadUsesValueFromOperand(&init);
          });
      return !readsOutput ||
             consumer.getMatchingIndexingMap(fused).isPermutation();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    patterns.add<ReadFilledOutputAsScalar>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
