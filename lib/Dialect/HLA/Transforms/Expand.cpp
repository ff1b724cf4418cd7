//===- Expand.cpp - Attention ops to algebra ops ------------------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-expand: every attention op becomes segment -> scan -> readout under its
// monoid. The monoid (getAttentionMonoid) already has the op's options
// applied, so this pass only wires operands: which op operand feeds which
// monoid input, and the tensor types of the components.
//
//===----------------------------------------------------------------------===//

#include "RunTimeChecks.h"

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/IR/RandomFeatures.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "hla-expand"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAEXPANDPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// The op operand that feeds the monoid input called `name`.
static Value getOperandForInput(AttentionOpInterface op, llvm::StringRef name,
                                Value phi) {
  Operation *operation = op.getOperation();
  if (name == "q")
    return op.getQuery();
  if (name == "k")
    return op.getKey();
  if (name == "v")
    return op.getValue();
  if (name == "phi")
    return phi;
  if (auto kda = dyn_cast<KDAOp>(operation)) {
    if (name == "g")
      return kda.getG();
    if (name == "beta")
      return kda.getBeta();
  }
  return {};
}

/// `[lead..., slot shape]` in `element`, with the slot's symbols bound.
static RankedTensorType getSlotType(llvm::ArrayRef<int64_t> lead,
                                    const MonoidSlot &slot,
                                    const MonoidDimBinder &binder,
                                    Type element) {
  llvm::SmallVector<int64_t> shape(lead);
  llvm::append_range(shape, binder.resolve(slot));
  return RankedTensorType::get(shape, element);
}

} // namespace

FailureOr<SegmentOp> mlir::hla::buildAttentionSegments(OpBuilder &b,
                                                       AttentionOpInterface op,
                                                       std::string &reason) {
  FailureOr<MonoidSpec> spec = getAttentionMonoid(op, reason);
  if (failed(spec))
    return failure();
  MLIRContext *ctx = op->getContext();
  Location loc = op.getLoc();
  auto monoid = MonoidAttr::get(ctx, *spec);
  Type f32 = Float32Type::get(ctx);
  RankedTensorType q = op.getQuery().getType();
  RankedTensorType v = op.getValue().getType();
  auto linsimp = dyn_cast<LinSimpOp>(op.getOperation());

  // Bind the monoid's extents from the operands.
  MonoidDimBinder binder;
  std::string ignored;
  (void)binder.bind({"", {"d"}, false}, {q.getDimSize(3)}, ignored);
  (void)binder.bind({"", {"dk"}, false}, {q.getDimSize(3)}, ignored);
  (void)binder.bind({"", {"dv"}, false}, {v.getDimSize(3)}, ignored);
  if (linsimp)
    (void)binder.bind({"", {"m"}, false},
                      {linsimp.getOmega().getType().getDimSize(0)}, ignored);

  // Every token input has an operand (LinSimp's φ is built below).
  for (unsigned input : spec->getTokenInputs()) {
    llvm::StringRef name = spec->inputs[input].name;
    if (!(linsimp && name == "phi") && !getOperandForInput(op, name, Value())) {
      reason = ("no operand for monoid input '" + name + "'").str();
      return failure();
    }
  }

  // LinSimp's global keys enter through their random features
  // φ(τ^½ k); the feature map keeps the key's heads.
  Value phi;
  if (linsimp) {
    RankedTensorType k = linsimp.getKey().getType();
    auto phiType = RankedTensorType::get(
        {k.getDimSize(0), k.getDimSize(1), k.getDimSize(2), binder.lookup("m")},
        f32);
    phi = FeatureMapOp::create(b, loc, phiType, linsimp.getKey(),
                               linsimp.getOmega(),
                               b.getF64FloatAttr(op.getEffectiveScale()));
  }

  // One-token segments of every component, per query head.
  llvm::SmallVector<Value> tokenOperands;
  for (unsigned input : spec->getTokenInputs())
    tokenOperands.push_back(
        getOperandForInput(op, spec->inputs[input].name, phi));
  llvm::SmallVector<int64_t> lead = {q.getDimSize(0), q.getDimSize(1),
                                     q.getDimSize(2)};
  llvm::SmallVector<Type> segmentTypes;
  for (const MonoidSlot &slot : spec->components)
    segmentTypes.push_back(getSlotType(lead, slot, binder, f32));
  // The only per-head parameter an attention monoid has is the decay.
  llvm::SmallVector<Value> headParams;
  if (!spec->getPerHeadParams().empty()) {
    headParams.push_back(getHeadDecay(op));
    emitHeadDecayCheck(b, loc, headParams.back());
  }
  return SegmentOp::create(b, loc, segmentTypes, monoid, tokenOperands,
                           headParams);
}

void mlir::hla::emitHeadDecayCheck(OpBuilder &b, Location loc, Value rates) {
  // NaN fails both ordered comparisons.
  emitRunTimeChecks(
      b, loc, rates,
      [](OpBuilder &nb, Location l, ValueRange rate, Value) -> Value {
        auto compare = [&](arith::CmpFPredicate p, double bound) -> Value {
          return arith::CmpFOp::create(
              nb, l, p, rate[0],
              arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(bound)));
        };
        Value valid =
            arith::AndIOp::create(nb, l, compare(arith::CmpFPredicate::OGT, 0),
                                  compare(arith::CmpFPredicate::OLE, 1));
        return arith::SelectOp::create(
            nb, l, valid,
            arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0)),
            arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(1)));
      },
      {{1, "hla: head_decay rates must be in (0, 1]"}});
}

namespace {

struct ExpandAttentionOp
    : public OpInterfaceRewritePattern<AttentionOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(AttentionOpInterface op,
                                PatternRewriter &rewriter) const override {
    std::string reason;
    FailureOr<SegmentOp> built = buildAttentionSegments(rewriter, op, reason);
    if (failed(built))
      return rewriter.notifyMatchFailure(op, reason);
    SegmentOp segments = *built;
    MonoidAttr monoid = segments.getMonoid();
    const MonoidSpec *spec = &monoid.getSpec();
    Location loc = op.getLoc();
    RankedTensorType q = op.getQuery().getType();
    int64_t batch = q.getDimSize(0), length = q.getDimSize(1);
    int64_t heads = q.getDimSize(2);
    auto linsimp = dyn_cast<LinSimpOp>(op.getOperation());
    llvm::SmallVector<int64_t> lead = {batch, length, heads};
    // Slot types as the segments have them, with other leading dimensions.
    auto slotType = [&](llvm::ArrayRef<int64_t> leading, unsigned c) {
      auto type = cast<RankedTensorType>(segments.getResult(c).getType());
      llvm::SmallVector<int64_t> shape(leading);
      llvm::append_range(shape, type.getShape().drop_front(3));
      return RankedTensorType::get(shape, type.getElementType());
    };

    // Inclusive scan along T, from the initial state, with the final state
    // when the op returns one.
    llvm::SmallVector<unsigned> carried = spec->getCarryComponents();
    llvm::SmallVector<int64_t> finalLead = {batch, heads};
    if (Value cu = op.getCuSeqlens()) {
      int64_t offsets = cast<RankedTensorType>(cu.getType()).getDimSize(0);
      finalLead[0] =
          ShapedType::isDynamic(offsets) ? ShapedType::kDynamic : offsets - 1;
    }
    bool wantFinal = !op.getFinalState().empty();
    llvm::SmallVector<Type> scanTypes;
    for (unsigned c : carried)
      scanTypes.push_back(slotType(lead, c));
    if (wantFinal)
      for (unsigned c : carried)
        scanTypes.push_back(slotType(finalLead, c));
    ValueRange initial = op.getInitialState();
    ValueRange scanInit = linsimp && !initial.empty()
                              ? initial.take_front(carried.size())
                              : initial;
    auto scan = ScanOp::create(
        rewriter, loc, scanTypes, monoid, segments.getResults(), scanInit,
        op.getCuSeqlens(), /*exclusive=*/false, /*axis=*/1);
    ValueRange prefix =
        ValueRange(scan.getResults()).take_front(carried.size());
    ValueRange finals =
        ValueRange(scan.getResults()).drop_front(carried.size());

    llvm::SmallVector<Value> replacements;
    if (linsimp) {
      llvm::SmallVector<Type> readoutTypes = {op.getOutput().getType()};
      if (wantFinal)
        llvm::append_range(
            readoutTypes,
            op.getFinalState().drop_front(carried.size()).getTypes());
      ValueRange anchors =
          initial.empty() ? ValueRange() : initial.drop_front(carried.size());
      auto readout = AnchorReadoutOp::create(
          rewriter, loc, readoutTypes, monoid, linsimp.getQuery(),
          linsimp.getAnchorKey(), linsimp.getAnchorValue(), linsimp.getOmega(),
          prefix, anchors, linsimp.getCuSeqlens(), linsimp.getWindowAttr(),
          rewriter.getF64FloatAttr(op.getEffectiveScale()));
      replacements.push_back(readout.getOutput());
      llvm::append_range(replacements, finals);
      llvm::append_range(replacements, readout.getFinalAnchors());
    } else {
      llvm::SmallVector<Value> readoutOperands;
      for (unsigned input : spec->getReadoutInputs())
        readoutOperands.push_back(
            getOperandForInput(op, spec->inputs[input].name, Value()));
      auto eps = op->getAttrOfType<FloatAttr>("eps");
      auto readout = ReadoutOp::create(
          rewriter, loc, op.getOutput().getType(), monoid, readoutOperands,
          prefix, eps ? eps : rewriter.getF64FloatAttr(1e-6));
      replacements.push_back(readout.getOutput());
      llvm::append_range(replacements, finals);
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

/// The constant matrix of an hla.random_features op.
static void materializeRandomFeatures(RandomFeaturesOp op) {
  auto type = cast<RankedTensorType>(op.getOutput().getType());
  auto element = cast<FloatType>(type.getElementType());
  std::vector<double> values = generateRandomFeatures(
      type.getDimSize(0), type.getDimSize(1), uint64_t(op.getSeed()));
  llvm::SmallVector<APFloat> elements;
  elements.reserve(values.size());
  for (double value : values) {
    APFloat x(value);
    bool lost = false;
    (void)x.convert(element.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
    elements.push_back(x);
  }
  OpBuilder b(op);
  Value constant = arith::ConstantOp::create(
      b, op.getLoc(), DenseElementsAttr::get(type, elements));
  op.getOutput().replaceAllUsesWith(constant);
  op.erase();
}

struct HLAExpandPass : public hla::impl::HLAExpandPassBase<HLAExpandPass> {
  using HLAExpandPassBase::HLAExpandPassBase;

  void runOnOperation() override {
    getOperation()->walk(
        [](RandomFeaturesOp op) { materializeRandomFeatures(op); });
    RewritePatternSet patterns(&getContext());
    populateHLAExpandPatterns(patterns);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Rewrite each attention op once; count what stays (no monoid).
    llvm::SmallVector<Operation *> attentionOps;
    getOperation()->walk(
        [&](AttentionOpInterface op) { attentionOps.push_back(op); });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    bool changed = false;
    if (failed(applyOpPatternsGreedily(attentionOps, frozen, config, &changed)))
      return signalPassFailure();
    unsigned kept = 0;
    getOperation()->walk([&](AttentionOpInterface) { ++kept; });
    numKept = kept;
    numExpanded = attentionOps.size() - kept;
  }
};
} // namespace

void mlir::hla::populateHLAExpandPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandAttentionOp>(patterns.getContext());
}
