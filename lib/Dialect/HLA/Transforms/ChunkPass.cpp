//===- ChunkPass.cpp - The hla-chunk pass -----------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-chunk rewrites `segment -> inclusive scan -> readout` under a monoid
// into three phases over chunks of c tokens:
//
//   1. summaries   scf.forall (b, n, h): every component's chunk summary,
//                  computed in masked-matmul form from the chunk's tokens;
//   2. carry       an exclusive hla.scan over the chunk summaries (from the
//                  initial state), giving the state carried into each chunk
//                  and the final state;
//   3. outputs     scf.forall (b, n, h): every readout at every position of
//                  the chunk, in masked-matmul form from the chunk's tokens
//                  and the carried state.
//
// Phases 1 and 3 come from the chunk plan (ChunkPlan.h): each index term is
// a tensor network over the chunk's positions whose internal indices are
// summed out by c x c matrix products. Phase 2 is lowered by hla-lower-scans
// (sequential or Blelloch); it works on small summaries, not on tokens.
//
// This file matches the chains, picks the family from the monoid's
// structure (index plan, gated delta rule, anchor window) and the form
// (phased, fused, segmented); ChunkRewriter.h lists where the rest lives.
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"

#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "hla-chunk"

namespace mlir::hla {
#define GEN_PASS_DEF_HLACHUNKPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

bool mlir::hla::chunk::isGatedDeltaRule(const MonoidSpec &spec,
                                        MLIRContext *ctx) {
  auto *dialect = ctx->getLoadedDialect<HLADialect>();
  if (!dialect)
    return false;
  FailureOr<MonoidSpec> base = dialect->getMonoidTemplate("kda");
  if (failed(base))
    return false;
  // The library's rules at this spec's scale, simplified as the attention
  // op's monoid is (scale = 1 folds away with its parameter).
  double scale = 1.0;
  if (std::optional<unsigned> p = spec.findParam("scale"))
    scale = spec.params[*p].value;
  MonoidSpec rule = base->withParams({{"scale", scale}}).simplify();
  if (spec.params.size() != rule.params.size())
    return false;
  for (auto [param, expected] : llvm::zip(spec.params, rule.params))
    if (param.name != expected.name)
      return false;
  return spec.inputs == rule.inputs && spec.components == rule.components &&
         spec.token == rule.token && spec.combine == rule.combine &&
         spec.readouts == rule.readouts;
}

namespace {

/// The segmented form's run count with the least modelled time (see
/// hla-chunk's description): `parallelism` iterations run at once, so S
/// runs of `lanes` sequences take ceil(lanes * S / parallelism) waves of 1/S
/// of a sequence each; a segmented chunk costs about 1.5 fused ones (its
/// summary pass; measured 1.52 on an H200), and the last run first folds
/// the S - 1 summaries before it, each about a chunk's time. At least two
/// chunks per run.
static int64_t modelledSegments(int64_t lanes, int64_t chunks,
                                int64_t parallelism) {
  auto cost = [&](int64_t s) {
    double waves = double((lanes * s + parallelism - 1) / parallelism);
    return waves *
           ((s == 1 ? 1.0 : 1.5) / double(s) + double(s - 1) / double(chunks));
  };
  int64_t count = 1;
  for (int64_t s = 2; s <= std::max<int64_t>(chunks / 2, 1); ++s)
    if (cost(s) < cost(count))
      count = s;
  return count;
}

struct HLAChunkPass : public hla::impl::HLAChunkPassBase<HLAChunkPass> {
  using HLAChunkPassBase::HLAChunkPassBase;

  void runOnOperation() override {
    if (valueTile < -1) {
      getOperation()->emitError()
          << "hla-chunk: value-tile must be >= 0 (0: whole rows) or -1 "
             "(auto), got "
          << int64_t(valueTile);
      return signalPassFailure();
    }
    if (segments < 0 || parallelism < 1) {
      getOperation()->emitError()
          << "hla-chunk: segments must be >= 0 and parallelism >= 1";
      return signalPassFailure();
    }
    if (chunkSize < 1) {
      getOperation()->emitError() << "hla-chunk: chunk-size must be at least "
                                     "1, got "
                                  << int64_t(chunkSize);
      return signalPassFailure();
    }
    llvm::SmallVector<Operation *> readouts;
    getOperation()->walk([&](Operation *op) {
      if (isa<ReadoutOp, AnchorReadoutOp>(op))
        readouts.push_back(op);
    });
    for (Operation *readout : readouts)
      if (failed(chunk(readout)))
        return signalPassFailure();
    llvm::SmallVector<TotalOp> totals;
    getOperation()->walk([&](TotalOp op) { totals.push_back(op); });
    for (TotalOp total : totals)
      if (failed(chunkTotal(total)))
        return signalPassFailure();
    llvm::SmallVector<AnchorVjpOp> anchorVjps;
    getOperation()->walk([&](AnchorVjpOp op) { anchorVjps.push_back(op); });
    for (AnchorVjpOp op : anchorVjps)
      if (failed(lowerAnchorVjp(op, chunkSize, bf16Products)))
        return signalPassFailure();
    llvm::SmallVector<PrefixVjpOp> vjps;
    getOperation()->walk([&](PrefixVjpOp op) { vjps.push_back(op); });
    for (PrefixVjpOp op : vjps) {
      // The segmented form cuts the backward's passes over chunks into
      // runs too (by the same model, where `segments` is 0).
      int64_t runs = 1;
      auto lead = cast<RankedTensorType>(op.getInputs()[0].getType());
      if (form == ChunkForm::Segmented && lead.hasStaticShape())
        runs = segments > 0
                   ? int64_t(segments)
                   : modelledSegments(lead.getDimSize(0) * lead.getDimSize(2),
                                      (lead.getDimSize(1) + chunkSize - 1) /
                                          chunkSize,
                                      parallelism);
      // The gated delta rule's backward has its own passes (parallel
      // gradients or not; not in runs nor value tiles).
      if (isGatedDeltaRule(op.getMonoid().getSpec(), op.getContext())) {
        if (failed(lowerDeltaRuleVjp(op, chunkSize, parallelGradients)))
          return signalPassFailure();
        continue;
      }
      if (failed(lowerPrefixVjp(op, chunkSize, parallelGradients, valueTile,
                                parallelism, splitGradients, runs,
                                bf16Products)))
        return signalPassFailure();
    }
  }

  /// `segment -> total` along T: the totals of every component per
  /// (batch entry, head), one loop over the sequence's chunks each. Other
  /// totals are left to hla-lower-scans.
  LogicalResult chunkTotal(TotalOp total) {
    auto fail = [&](const llvm::Twine &why) {
      return total->emitError() << "hla-chunk: " << why;
    };
    ChainInfo info;
    info.readout = total;
    info.total = total;
    info.monoid = total.getMonoid();
    info.segment = total.getSegments()[0].getDefiningOp<SegmentOp>();
    if (!info.segment || total.getAxis() != 1 ||
        info.segment.getMonoid() != info.monoid ||
        llvm::any_of(info.segment.getResults(),
                     [](Value v) { return !v.hasOneUse(); }) ||
        ValueRange(info.segment.getResults()) != total.getSegments())
      return success();
    auto lead = cast<RankedTensorType>(info.segment.getResult(0).getType());
    const MonoidSpec &spec = info.monoid.getSpec();
    if (Value cu = total.getCuSeqlens())
      if (!cast<RankedTensorType>(cu.getType()).hasStaticShape())
        return fail("cu_seqlens needs a static number of sequences");
    if (lead.getRank() - spec.components[0].getRank() != 3 ||
        !lead.hasStaticShape() ||
        llvm::any_of(info.segment.getInputs(), [](Value v) {
          return !cast<RankedTensorType>(v.getType()).hasStaticShape();
        }))
      return fail("the chunked lowering needs static [B, T, H, ...] shapes");
    info.batch = lead.getDimSize(0);
    info.length = lead.getDimSize(1);
    info.heads = lead.getDimSize(2);
    bool deltaRule = isGatedDeltaRule(spec, total->getContext());
    FailureOr<ChunkPlan> plan = ChunkPlan();
    if (!deltaRule) {
      std::string error;
      plan = buildChunkPlan(spec, error);
      if (failed(plan))
        return fail(error);
    }
    ChunkRewriter rewriter(info, chunkSize, *plan);
    rewriter.deltaRule = deltaRule;
    return rewriter.rewriteTotal();
  }

  LogicalResult chunk(Operation *readout) {
    ChainInfo info;
    info.readout = readout;
    info.anchor = dyn_cast<AnchorReadoutOp>(readout);
    auto fail = [&](const llvm::Twine &why) {
      return readout->emitError() << "hla-chunk: " << why;
    };
    ValueRange states = info.anchor
                            ? ValueRange(info.anchor.getState())
                            : ValueRange(cast<ReadoutOp>(readout).getState());
    MonoidAttr monoid = info.anchor ? info.anchor.getMonoid()
                                    : cast<ReadoutOp>(readout).getMonoid();
    Operation *state = states.empty() ? nullptr : states[0].getDefiningOp();
    info.scan = dyn_cast_or_null<ScanOp>(state);
    if (!info.scan || info.scan.getExclusive() || info.scan.getAxis() != 1)
      return fail("the readout's state must come from an inclusive hla.scan "
                  "along axis 1");
    info.segment = info.scan.getSegments().empty()
                       ? SegmentOp()
                       : info.scan.getSegments()[0].getDefiningOp<SegmentOp>();
    if (!info.segment)
      return fail("the scan's segments must come from one hla.segment");
    if (info.scan.getMonoid() != monoid || info.segment.getMonoid() != monoid)
      return fail("segment, scan and readout must share one monoid");
    info.monoid = monoid;
    for (Value v : info.segment.getResults())
      if (!v.hasOneUse())
        return fail("the segments must feed only the scan");
    for (Value v : info.scan.getPrefix())
      if (!v.hasOneUse())
        return fail("the prefix states must feed only the readout");
    if (Value cu = info.scan.getCuSeqlens())
      if (!cast<RankedTensorType>(cu.getType()).hasStaticShape())
        return fail("cu_seqlens needs a static number of sequences");
    auto lead = cast<RankedTensorType>(info.segment.getResult(0).getType());
    if (lead.getRank() < 3 || !lead.hasStaticShape())
      return fail("the chunked lowering needs static [B, T, H, ...] shapes");
    llvm::SmallVector<Value> inputs(info.segment.getInputs());
    if (info.anchor)
      llvm::append_range(inputs, info.anchor->getOperands());
    else
      llvm::append_range(inputs, cast<ReadoutOp>(readout).getInputs());
    for (Value v : inputs)
      if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
        return fail("the chunked lowering needs static input shapes");
    if (lead.getRank() - monoid.getSpec().components[0].getRank() != 3)
      return fail("the chunked lowering needs [B, T, H] leading dimensions");
    info.batch = lead.getDimSize(0);
    info.length = lead.getDimSize(1);
    info.heads = lead.getDimSize(2);

    // The decisions made below are recorded on the module (the chain's
    // readout is gone by then).
    auto module = readout->getParentOfType<ModuleOp>();
    std::string decision;
    llvm::raw_string_ostream decided(decision);
    decided << monoid.getSpec().name << ": ";

    // The gated delta rule has a matrix-valued transition: it is chunked in
    // the WY/UT form rather than by an index plan.
    const MonoidSpec &monoidSpec = monoid.getSpec();
    bool deltaRule = isGatedDeltaRule(monoidSpec, readout->getContext());
    FailureOr<ChunkPlan> plan = ChunkPlan();
    if (!deltaRule) {
      std::string error;
      plan = buildChunkPlan(monoidSpec, error);
      if (failed(plan))
        return fail(error);
    }
    ChunkRewriter rewriter(info, chunkSize, *plan);
    rewriter.stableFeatures = stableFeatures;
    rewriter.anchorRows = anchorRows;
    rewriter.deltaRule = deltaRule;
    rewriter.causalIsolation = causalIsolation;
    int64_t width = info.outputType().getDimSize(3);
    // Auto value tiles: the most tiles (a power of two, >= 32 columns each)
    // whose (sequence, head, tile) iterations still fit in one wave of
    // `parallelism`. Measured on an H200 (bench/RESULTS.md): 1.15-1.6x at
    // 4x16 (sequence, head) pairs; none at 8x16, which already fill it.
    int64_t sequenceCount = info.batch;
    if (Value cu = info.scan.getCuSeqlens())
      sequenceCount = cast<RankedTensorType>(cu.getType()).getDimSize(0) - 1;
    int64_t lanes = sequenceCount * info.heads;
    int64_t autoTiles = 1;
    if (valueTile == -1 && !info.anchor && separableValueSymbol(monoidSpec))
      while (width % (2 * autoTiles) == 0 && width / (2 * autoTiles) >= 32 &&
             lanes * 2 * autoTiles <= parallelism)
        autoTiles *= 2;
    int64_t chosenTile = valueTile;
    if (valueTile == -1)
      chosenTile = autoTiles > 1 ? width / autoTiles : 0;
    rewriter.valueTile = chosenTile;
    auto refuseValueTiles = [&](const llvm::Twine &what) {
      return fail("value-tile " + llvm::Twine(chosenTile) +
                  " needs the fused form; " + what + " keeps whole rows");
    };
    bool cutsValues = chosenTile > 0 && chosenTile < width;
    LogicalResult rewritten = failure();
    if (form == ChunkForm::Fused) {
      rewritten = rewriter.rewriteFused();
      decided << "fused";
    } else if (form == ChunkForm::Segmented) {
      // By default the count with the least modelled time: `parallelism`
      // iterations run at once, so S runs take ceil(lanes * S / parallelism)
      // waves of 1/S of a sequence each, and a segmented chunk costs about
      // 1.5 fused ones (its summary pass; measured 1.52 on an H200); the
      // last run first folds the S - 1 summaries before it, each about a
      // chunk's time (a dependent chain: hla2 on register tiles at
      // 2x16x32768 took 1.03 ms in its readout kernel with 32 runs of 16
      // chunks, 0.62 ms with 4 of 128 at 8x16x8192). At least two chunks
      // per run; packed sequences keep the fused form.
      int64_t count = segments;
      if (count == 0 && info.scan.getCuSeqlens()) {
        count = 1;
      } else if (count == 0 && autoTiles > 1 &&
                 2 * lanes * autoTiles >= parallelism) {
        // Auto value tiles fill at least half of `parallelism` without the
        // segmented form's second pass (measured faster: linear attention
        // 4x16x8192x128, 2.28 vs 3.57 ms).
        count = 1;
      } else if (count == 0) {
        count = modelledSegments(
            lanes, (info.length + chunkSize - 1) / chunkSize, parallelism);
      }
      if (count > 1 && valueTile == -1) {
        cutsValues = false;
        rewriter.valueTile = 0;
      }
      if (count > 1 && cutsValues)
        return refuseValueTiles("the segmented form with " +
                                llvm::Twine(count) + " segments");
      rewritten = count == 1 ? rewriter.rewriteFused()
                             : rewriter.rewriteSegmented(count);
      if (count == 1)
        decided << "fused";
      else
        decided << "segmented, " << count << " segments";
    } else {
      if (cutsValues && valueTile != -1)
        return refuseValueTiles("the phased form");
      rewriter.valueTile = 0;
      rewritten = rewriter.rewritePhased();
      decided << "phased";
    }
    int64_t tile = rewriter.valueTile;
    if (tile > 0 && tile < width)
      decided << ", " << width / tile << " value tiles of " << tile
              << " columns";
    if (succeeded(rewritten) && module)
      recordChunking(module, decision);
    return rewritten;
  }
};
} // namespace