//===- FuseTileElementwise.cpp - Fuse elementwise tile chains -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-fuse-tile-elementwise: upstream's elementwise fusion, restricted to
// consumers whose loops are all parallel (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAFUSETILEELEMENTWISEPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;

namespace {
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
      return consumer &&
             consumer.getNumLoops() == consumer.getNumParallelLoops() &&
             producer && producer->hasOneUse();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
