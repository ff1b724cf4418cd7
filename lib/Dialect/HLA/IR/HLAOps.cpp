//===- HLAOps.cpp - hla operations ------------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Verifiers. Every diagnostic names the operand (or attribute) at fault and,
// for size mismatches, both sizes, so that a model-graph author can fix the
// graph without reading the dialect's source.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLADialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::hla;

#include "hla/Dialect/HLA/IR/HLAInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "hla/Dialect/HLA/IR/HLAOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
/// Names of the axes of a [B, T, H, D] tensor, for diagnostics.
constexpr const char *kAxisNames[] = {"batch size", "sequence length",
                                      "head count", "feature size"};
} // namespace

static bool isSupportedFloat(Type type) {
  return type.isF32() || type.isF16() || type.isBF16();
}

static bool sizesConflict(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// Prints a shape as [1, ?, 4].
static std::string shapeToString(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (i)
      text += ", ";
    text += ShapedType::isDynamic(size) ? "?" : std::to_string(size);
  }
  return text + "]";
}

/// Whether `actual` matches `expected`, treating dynamic sizes on either
/// side as matching anything.
static bool shapesCompatible(llvm::ArrayRef<int64_t> actual,
                             llvm::ArrayRef<int64_t> expected) {
  if (actual.size() != expected.size())
    return false;
  for (auto [a, e] : llvm::zip(actual, expected))
    if (sizesConflict(a, e))
      return false;
  return true;
}

/// Checks that `type` is a rank-`rank` tensor of f32, f16 or bf16.
static LogicalResult verifyActivation(Operation *op, llvm::StringRef name,
                                      RankedTensorType type, int64_t rank,
                                      llvm::StringRef layout) {
  if (type.getRank() != rank)
    return op->emitOpError()
           << "'" << name << "' must have rank " << rank << " " << layout
           << ", but has rank " << type.getRank();
  if (!isSupportedFloat(type.getElementType()))
    return op->emitOpError() << "'" << name
                             << "' element type must be f32, f16 or bf16, but "
                                "is "
                             << type.getElementType();
  return success();
}

/// Checks that dimension `axis` of `a` equals dimension `axis` of `b`.
static LogicalResult verifySameDim(Operation *op, llvm::StringRef nameA,
                                   RankedTensorType a, llvm::StringRef nameB,
                                   RankedTensorType b, unsigned axis,
                                   const char *what = nullptr) {
  int64_t sa = a.getDimSize(axis), sb = b.getDimSize(axis);
  if (!sizesConflict(sa, sb))
    return success();
  if (!what)
    what = axis < 4 ? kAxisNames[axis] : "size";
  return op->emitOpError() << "'" << nameA << "' " << what << " " << sa
                           << " differs from '" << nameB << "' " << what << " "
                           << sb;
}

static LogicalResult verifySameElementType(Operation *op, llvm::StringRef nameA,
                                           RankedTensorType a,
                                           llvm::StringRef nameB,
                                           RankedTensorType b) {
  if (a.getElementType() == b.getElementType())
    return success();
  return op->emitOpError() << "'" << nameA << "' element type "
                           << a.getElementType() << " differs from '" << nameB
                           << "' element type " << b.getElementType();
}

/// Checks the optional float attribute `name` with `isValid`; `range` says
/// what is allowed.
static LogicalResult verifyFloatAttr(Operation *op, llvm::StringRef name,
                                     llvm::function_ref<bool(double)> isValid,
                                     llvm::StringRef range) {
  auto attr = op->getAttrOfType<FloatAttr>(name);
  if (!attr)
    return success();
  double value = attr.getValueAsDouble();
  if (std::isfinite(value) && isValid(value))
    return success();
  return op->emitOpError() << "'" << name << "' must be " << range << ", got "
                           << value;
}

/// Range checks shared by every op that has these attributes.
static LogicalResult verifyOptionAttrs(Operation *op) {
  if (failed(verifyFloatAttr(
          op, "scale", [](double v) { return v > 0; }, "positive")) ||
      failed(verifyFloatAttr(
          op, "eps", [](double v) { return v > 0; }, "positive")) ||
      failed(verifyFloatAttr(
          op, "decay", [](double v) { return v > 0 && v <= 1; },
          "in (0, 1]")) ||
      failed(verifyFloatAttr(
          op, "ridge", [](double v) { return v >= 0; }, "non-negative")))
    return failure();
  if (auto window = op->getAttrOfType<IntegerAttr>("window"))
    if (window.getInt() < 1)
      return op->emitOpError()
             << "'window' must be at least 1, got " << window.getInt();
  return success();
}

/// Checks `cu_seqlens`: a rank-1 i32/i64 tensor of at least two offsets,
/// with a batch of one. Returns the number of sequences (or kDynamic).
static FailureOr<int64_t> verifyCuSeqlens(Operation *op, Value cuSeqlens,
                                          int64_t batch) {
  auto type = cast<RankedTensorType>(cuSeqlens.getType());
  if (type.getRank() != 1 || !(type.getElementType().isInteger(32) ||
                               type.getElementType().isInteger(64)))
    return op->emitOpError()
           << "'cu_seqlens' must be a rank-1 tensor of i32 or i64, got "
           << type;
  int64_t length = type.getDimSize(0);
  if (!ShapedType::isDynamic(length) && length < 2)
    return op->emitOpError() << "'cu_seqlens' needs at least 2 offsets (one "
                                "sequence), got "
                             << length;
  if (sizesConflict(batch, 1))
    return op->emitOpError()
           << "with 'cu_seqlens' the batch size must be 1 (sequences are "
              "packed along T), got "
           << batch;
  return ShapedType::isDynamic(length) ? ShapedType::kDynamic : length - 1;
}

//===----------------------------------------------------------------------===//
// Attention ops
//===----------------------------------------------------------------------===//

/// Checks a group of state tensors (initial or final) against the op's
/// state slots: [lead, H_q, slot shape...] in f32.
static LogicalResult verifyStateGroup(Operation *op, llvm::StringRef groupName,
                                      TypeRange types,
                                      llvm::ArrayRef<AttentionStateSlot> slots,
                                      int64_t lead, int64_t heads) {
  if (types.size() != slots.size()) {
    std::string names;
    for (auto [i, slot] : llvm::enumerate(slots))
      names += (i ? ", " : "") + slot.name;
    return op->emitOpError()
           << "expects " << slots.size() << " " << groupName << " tensors ("
           << names << "), got " << types.size();
  }
  for (auto [i, type, slot] : llvm::enumerate(types, slots)) {
    auto tensor = cast<RankedTensorType>(type);
    llvm::SmallVector<int64_t> expected = {lead, heads};
    llvm::append_range(expected, slot.shape);
    if (!shapesCompatible(tensor.getShape(), expected))
      return op->emitOpError()
             << "'" << groupName << "' #" << i << " (" << slot.name
             << ") has shape " << shapeToString(tensor.getShape())
             << " but the state needs " << shapeToString(expected);
    if (!tensor.getElementType().isF32())
      return op->emitOpError()
             << "'" << groupName << "' #" << i << " (" << slot.name
             << ") must be f32, got " << tensor.getElementType();
  }
  return success();
}

Value mlir::hla::getHeadDecay(Operation *op) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<LinearAttentionOp, HLA2Op, AHLAOp, HLA3Op>(
          [](auto attention) { return attention.getHeadDecay(); })
      .Default([](Operation *) { return Value(); });
}

/// Checks everything the attention ops share: q/k/v layout and types, head
/// grouping, output, options, cu_seqlens and the state tensors.
static LogicalResult verifyAttentionOp(AttentionOpInterface op) {
  Operation *operation = op.getOperation();
  RankedTensorType q = op.getQuery().getType();
  RankedTensorType k = op.getKey().getType();
  RankedTensorType v = op.getValue().getType();
  const char *layout = "[B, T, H, D]";
  if (failed(verifyActivation(operation, "query", q, 4, layout)) ||
      failed(verifyActivation(operation, "key", k, 4, layout)) ||
      failed(verifyActivation(operation, "value", v, 4, layout)) ||
      failed(verifySameElementType(operation, "key", k, "query", q)) ||
      failed(verifySameElementType(operation, "value", v, "query", q)))
    return failure();
  // B, H and D must not be empty (an empty sequence, T = 0, is allowed).
  for (auto [name, type] :
       {std::make_pair("query", q), std::make_pair("key", k),
        std::make_pair("value", v)})
    for (auto [axis, what] :
         {std::make_pair(0, "batch size"), std::make_pair(2, "head count"),
          std::make_pair(3, "feature size")})
      if (type.getDimSize(axis) == 0)
        return op.emitOpError()
               << "'" << name << "' " << what << " must be at least 1, got 0";
  for (unsigned axis : {0u, 1u})
    if (failed(verifySameDim(operation, "key", k, "query", q, axis)) ||
        failed(verifySameDim(operation, "value", v, "query", q, axis)))
      return failure();
  if (failed(verifySameDim(operation, "value", v, "key", k, 2)) ||
      failed(verifySameDim(operation, "key", k, "query", q, 3)))
    return failure();
  int64_t hq = q.getDimSize(2), hkv = k.getDimSize(2);
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) &&
      (hkv == 0 || hq % hkv != 0))
    return op.emitOpError() << "query head count " << hq
                            << " is not a multiple of the key/value head "
                               "count "
                            << hkv;

  RankedTensorType out = op.getOutput().getType();
  llvm::SmallVector<int64_t> expectedOut = {q.getDimSize(0), q.getDimSize(1),
                                            hq, v.getDimSize(3)};
  if (!shapesCompatible(out.getShape(), expectedOut))
    return op.emitOpError()
           << "'output' has shape " << shapeToString(out.getShape())
           << " but [B, T, H_q, dv] is " << shapeToString(expectedOut);
  if (out.getElementType() != q.getElementType())
    return op.emitOpError()
           << "'output' element type " << out.getElementType()
           << " differs from 'query' element type " << q.getElementType();

  if (failed(verifyOptionAttrs(operation)))
    return failure();
  if (Value headDecay = getHeadDecay(operation)) {
    if (operation->hasAttr("decay"))
      return op.emitOpError()
             << "takes the decay as the 'decay' attribute or as the "
                "'head_decay' tensor, not both";
    auto type = cast<RankedTensorType>(headDecay.getType());
    if (type.getRank() != 1 || !type.getElementType().isF32() ||
        sizesConflict(type.getDimSize(0), hq))
      return op.emitOpError()
             << "'head_decay' must be a [H_q] f32 tensor (one rate per query "
                "head), H_q = "
             << (ShapedType::isDynamic(hq) ? std::string("?")
                                           : std::to_string(hq))
             << ", got " << type;
  }

  int64_t lead = q.getDimSize(0);
  if (Value cu = op.getCuSeqlens()) {
    FailureOr<int64_t> sequences = verifyCuSeqlens(operation, cu, lead);
    if (failed(sequences))
      return failure();
    lead = *sequences;
  }

  if (op.getInitialState().empty() && op.getFinalState().empty())
    return success();
  std::string reason;
  FailureOr<llvm::SmallVector<AttentionStateSlot>> slots =
      getAttentionStateSlots(operation, reason);
  if (failed(slots))
    return op.emitOpError() << "has no state to carry in or out: " << reason;
  if (!op.getInitialState().empty() &&
      failed(verifyStateGroup(operation, "initial_state",
                              op.getInitialState().getTypes(), *slots, lead,
                              hq)))
    return failure();
  if (!op.getFinalState().empty() &&
      failed(verifyStateGroup(operation, "final_state",
                              op.getFinalState().getTypes(), *slots, lead, hq)))
    return failure();
  return success();
}

LogicalResult LinearAttentionOp::verify() { return verifyAttentionOp(*this); }
LogicalResult HLA2Op::verify() { return verifyAttentionOp(*this); }
LogicalResult AHLAOp::verify() { return verifyAttentionOp(*this); }
LogicalResult HLA3Op::verify() { return verifyAttentionOp(*this); }

LogicalResult LinSimpOp::verify() {
  Operation *op = getOperation();
  RankedTensorType k = getKey().getType(), v = getValue().getType();
  RankedTensorType r = getAnchorKey().getType();
  RankedTensorType u = getAnchorValue().getType();
  RankedTensorType omega = getOmega().getType();
  const char *layout = "[B, T, H, D]";
  // The anchors pair with the keys (r) and values (u), head for head.
  if (failed(verifyActivation(op, "anchor_key", r, 4, layout)) ||
      failed(verifyActivation(op, "anchor_value", u, 4, layout)) ||
      failed(verifyActivation(op, "key", k, 4, layout)) ||
      failed(verifyActivation(op, "value", v, 4, layout)))
    return failure();
  for (unsigned axis = 0; axis < 4; ++axis)
    if (failed(verifySameDim(op, "anchor_key", r, "key", k, axis)) ||
        failed(verifySameDim(op, "anchor_value", u, "value", v, axis)))
      return failure();
  if (failed(verifySameElementType(op, "anchor_key", r, "key", k)) ||
      failed(verifySameElementType(op, "anchor_value", u, "value", v)))
    return failure();
  if (failed(verifyActivation(op, "omega", omega, 2, "[m, d]")) ||
      failed(verifySameElementType(op, "omega", omega, "key", k)))
    return failure();
  if (sizesConflict(omega.getDimSize(1), k.getDimSize(3)))
    return emitOpError() << "'omega' feature size " << omega.getDimSize(1)
                         << " differs from 'key' feature size "
                         << k.getDimSize(3);
  return verifyAttentionOp(*this);
}

LogicalResult KDAOp::verify() {
  Operation *op = getOperation();
  RankedTensorType k = getKey().getType();
  RankedTensorType g = getG().getType(), beta = getBeta().getType();
  if (failed(verifyActivation(op, "g", g, 4, "[B, T, H, dk]")) ||
      failed(verifyActivation(op, "beta", beta, 3, "[B, T, H]")) ||
      failed(verifyActivation(op, "key", k, 4, "[B, T, H, D]")) ||
      failed(verifySameElementType(op, "g", g, "key", k)) ||
      failed(verifySameElementType(op, "beta", beta, "key", k)))
    return failure();
  for (unsigned axis = 0; axis < 4; ++axis)
    if (failed(verifySameDim(op, "g", g, "key", k, axis)))
      return failure();
  for (unsigned axis = 0; axis < 3; ++axis)
    if (failed(verifySameDim(op, "beta", beta, "key", k, axis)))
      return failure();
  return verifyAttentionOp(*this);
}

//===----------------------------------------------------------------------===//
// Algebra ops
//===----------------------------------------------------------------------===//

namespace {
/// Checks a list of tensors against monoid slots: each is [lead..., slot]
/// with a common leading shape, binding the slots' symbols.
class SlotChecker {
public:
  /// `minLead`: how many leading dimensions a tensor needs at least.
  SlotChecker(Operation *op, MonoidDimBinder &binder, int64_t minLead = 1)
      : op(op), binder(binder), minLead(minLead) {}

  /// Checks `type` as `[lead..., slot]`. The first call fixes the leading
  /// shape (unless `expectLead` was set); with `headDivides`, the last
  /// leading dimension may instead divide the fixed one (a shared K/V head).
  LogicalResult check(llvm::StringRef what, unsigned index,
                      const MonoidSlot &slot, Type type,
                      bool headDivides = false) {
    auto tensor = cast<RankedTensorType>(type);
    int64_t leadRank = tensor.getRank() - int64_t(slot.getRank());
    if (leadRank < minLead || (lead && leadRank != int64_t(lead->size())))
      return op->emitOpError()
             << what << " #" << index << " ('" << slot.name << "') has rank "
             << tensor.getRank() << " but needs "
             << (lead ? std::to_string(lead->size()) : std::string("some"))
             << " leading dimension(s) and " << slot.getRank()
             << " for the slot [" << llvm::join(slot.shape, ", ") << "]";
    llvm::ArrayRef<int64_t> leading = tensor.getShape().take_front(leadRank);
    if (!lead) {
      lead = llvm::SmallVector<int64_t>(leading);
    } else {
      for (int64_t i = 0; i < leadRank; ++i) {
        int64_t a = leading[i], e = (*lead)[i];
        bool isHead = i == leadRank - 1;
        if (!sizesConflict(a, e))
          continue;
        if (headDivides && isHead && !ShapedType::isDynamic(a) && a > 0 &&
            e % a == 0)
          continue;
        return op->emitOpError()
               << what << " #" << index << " ('" << slot.name
               << "') has leading shape " << shapeToString(leading)
               << " but the others have " << shapeToString(*lead);
      }
    }
    std::string error;
    if (failed(
            binder.bind(slot, tensor.getShape().drop_front(leadRank), error)))
      return op->emitOpError() << what << " #" << index << ": " << error;
    return success();
  }

  /// Fixes the leading shape before any check.
  void setLead(llvm::ArrayRef<int64_t> shape) {
    lead = llvm::SmallVector<int64_t>(shape);
  }
  llvm::ArrayRef<int64_t> getLead() const { return *lead; }

private:
  Operation *op;
  MonoidDimBinder &binder;
  int64_t minLead;
  std::optional<llvm::SmallVector<int64_t>> lead;
};
} // namespace

/// Checks that all of `types` are float tensors of one element type.
static LogicalResult verifyCommonFloat(Operation *op, llvm::StringRef what,
                                       TypeRange types) {
  Type first;
  for (Type type : types) {
    Type element = cast<RankedTensorType>(type).getElementType();
    if (!isa<FloatType>(element))
      return op->emitOpError()
             << what << " must be float tensors, got " << type;
    if (first && element != first)
      return op->emitOpError()
             << what << " mix element types " << first << " and " << element;
    first = element;
  }
  return success();
}

static std::string slotNames(const MonoidSpec &spec,
                             llvm::ArrayRef<unsigned> indices, bool inputs) {
  std::string names;
  for (auto [i, index] : llvm::enumerate(indices))
    names += (i ? ", " : "") +
             (inputs ? spec.inputs[index].name : spec.components[index].name);
  return names;
}

/// Checks the per-head parameter tensors of an op that evaluates `spec`'s
/// token rules: one `[heads]` f32 tensor per per-head parameter.
static LogicalResult verifyHeadParams(Operation *op, const MonoidSpec &spec,
                                      ValueRange headParams, int64_t heads) {
  llvm::SmallVector<unsigned> perHead = spec.getPerHeadParams();
  if (headParams.size() != perHead.size())
    return op->emitOpError() << "monoid '" << spec.name << "' has "
                             << perHead.size() << " per-head parameter(s), got "
                             << headParams.size() << " 'head_params' tensor(s)";
  for (auto [value, index] : llvm::zip(headParams, perHead)) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || !type.getElementType().isF32() ||
        sizesConflict(type.getDimSize(0), heads))
      return op->emitOpError()
             << "per-head parameter '" << spec.params[index].name
             << "' needs a ["
             << (ShapedType::isDynamic(heads) ? std::string("H")
                                              : std::to_string(heads))
             << "] f32 tensor (one value per head), got " << type;
  }
  return success();
}

LogicalResult SegmentOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  llvm::SmallVector<unsigned> tokenInputs = spec.getTokenInputs();
  if (getInputs().size() != tokenInputs.size())
    return emitOpError() << "monoid '" << spec.name << "' reads "
                         << tokenInputs.size() << " token inputs ("
                         << slotNames(spec, tokenInputs, true) << "), got "
                         << getInputs().size();
  if (getSegments().size() != spec.components.size())
    return emitOpError() << "monoid '" << spec.name << "' has "
                         << spec.components.size() << " components, got "
                         << getSegments().size() << " results";
  if (failed(verifyCommonFloat(*this, "results", getSegments().getTypes())))
    return failure();
  // Inputs may differ in precision (LinSimp's f32 key features beside bf16
  // values): each is read as its own float type.
  for (Type type : getInputs().getTypes())
    if (!isa<FloatType>(cast<RankedTensorType>(type).getElementType()))
      return emitOpError() << "inputs must be float tensors, got " << type;
  MonoidDimBinder binder;
  SlotChecker checker(*this, binder);
  for (auto [i, type] : llvm::enumerate(getSegments().getTypes()))
    if (failed(checker.check("result", i, spec.components[i], type)))
      return failure();
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (failed(checker.check("input", i, spec.inputs[tokenInputs[i]],
                             input.getType(), /*headDivides=*/true)))
      return failure();
  // The head axis is the last leading dimension of the results.
  int64_t heads = ShapedType::kDynamic;
  if (!getSegments().empty()) {
    auto first = cast<RankedTensorType>(getSegments()[0].getType());
    int64_t leadRank = first.getRank() - spec.components[0].getRank();
    if (leadRank > 0)
      heads = first.getDimSize(leadRank - 1);
  }
  return verifyHeadParams(*this, spec, getHeadParams(), heads);
}

LogicalResult CombineOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  size_t n = spec.components.size();
  if (getLhs().size() != n || getRhs().size() != n || getResults().size() != n)
    return emitOpError() << "monoid '" << spec.name << "' has " << n
                         << " components, but got " << getLhs().size()
                         << " lhs, " << getRhs().size() << " rhs and "
                         << getResults().size() << " results";
  if (failed(verifyCommonFloat(*this, "operands", getOperandTypes())))
    return failure();
  MonoidDimBinder binder;
  // One pair of states may have no leading dimensions at all.
  SlotChecker checker(*this, binder, /*minLead=*/0);
  for (size_t i = 0; i < n; ++i) {
    Type lhs = getLhs()[i].getType(), rhs = getRhs()[i].getType();
    Type result = getResults()[i].getType();
    if (failed(checker.check("lhs", i, spec.components[i], lhs)))
      return failure();
    if (lhs != rhs || lhs != result)
      return emitOpError() << "component #" << i << " ('"
                           << spec.components[i].name << "') has lhs " << lhs
                           << ", rhs " << rhs << " and result " << result
                           << "; all three must match";
  }
  return success();
}

/// The leading shape of a state combined along `axis` of `lead` (the axis
/// dropped; with `cu`, which needs axis 1, the batch counts the packed
/// sequences), checked; hla.scan's finals and inits, hla.total's results.
static FailureOr<llvm::SmallVector<int64_t>>
verifyAxisDropped(Operation *op, llvm::ArrayRef<int64_t> lead, int64_t axis,
                  Value cu) {
  if (axis < 0 || axis >= int64_t(lead.size()))
    return op->emitOpError()
           << "'axis' " << axis << " is not a leading dimension (there are "
           << lead.size() << ")";
  llvm::SmallVector<int64_t> dropped(lead);
  dropped.erase(dropped.begin() + axis);
  if (cu) {
    if (axis != 1)
      return op->emitOpError() << "'cu_seqlens' needs 'axis' = 1, got " << axis;
    FailureOr<int64_t> sequences = verifyCuSeqlens(op, cu, lead[0]);
    if (failed(sequences))
      return failure();
    dropped[0] = *sequences;
  }
  return dropped;
}

LogicalResult ScanOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  llvm::SmallVector<unsigned> carried = spec.getCarryComponents();
  size_t n = spec.components.size(), k = carried.size();
  if (getSegments().size() != n)
    return emitOpError() << "monoid '" << spec.name << "' has " << n
                         << " components, got " << getSegments().size()
                         << " segments";
  if (k == 0)
    return emitOpError() << "monoid '" << spec.name
                         << "' carries no components (it has no readout)";
  if (getResults().size() != k && getResults().size() != 2 * k)
    return emitOpError() << "expects " << k << " results (carried: "
                         << slotNames(spec, carried, false) << "), or " << 2 * k
                         << " with final states, got " << getResults().size();
  if (!getInit().empty() && getInit().size() != k)
    return emitOpError() << "expects " << k << " init tensors ("
                         << slotNames(spec, carried, false) << "), got "
                         << getInit().size();
  if (failed(verifyCommonFloat(*this, "segments", getSegments().getTypes())))
    return failure();

  MonoidDimBinder binder;
  SlotChecker checker(*this, binder);
  for (auto [i, type] : llvm::enumerate(getSegments().getTypes()))
    if (failed(checker.check("segment", i, spec.components[i], type)))
      return failure();
  llvm::SmallVector<int64_t> lead(checker.getLead());
  FailureOr<llvm::SmallVector<int64_t>> finalLead =
      verifyAxisDropped(*this, lead, getAxis(), getCuSeqlens());
  if (failed(finalLead))
    return failure();

  auto checkGroup = [&](llvm::StringRef what, TypeRange types,
                        llvm::ArrayRef<int64_t> leading) -> LogicalResult {
    for (auto [i, type] : llvm::enumerate(types)) {
      const MonoidSlot &slot = spec.components[carried[i]];
      auto tensor = cast<RankedTensorType>(type);
      llvm::SmallVector<int64_t> expected(leading);
      llvm::append_range(expected, binder.resolve(slot));
      if (!shapesCompatible(tensor.getShape(), expected))
        return emitOpError()
               << what << " #" << i << " ('" << slot.name << "') has shape "
               << shapeToString(tensor.getShape()) << " but needs "
               << shapeToString(expected);
      Type element = cast<RankedTensorType>(getSegments()[carried[i]].getType())
                         .getElementType();
      if (tensor.getElementType() != element)
        return emitOpError() << what << " #" << i << " ('" << slot.name
                             << "') element type " << tensor.getElementType()
                             << " differs from its segment's " << element;
    }
    return success();
  };
  if (failed(checkGroup("prefix result", getPrefix().getTypes(), lead)) ||
      failed(checkGroup("final result", getFinal().getTypes(), *finalLead)) ||
      failed(checkGroup("init", getInit().getTypes(), *finalLead)))
    return failure();
  return success();
}

LogicalResult TotalOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  size_t n = spec.components.size();
  if (getSegments().size() != n || getTotals().size() != n)
    return emitOpError() << "monoid '" << spec.name << "' has " << n
                         << " components, got " << getSegments().size()
                         << " segments and " << getTotals().size()
                         << " results";
  if (failed(verifyCommonFloat(*this, "segments", getSegments().getTypes())))
    return failure();
  MonoidDimBinder binder;
  SlotChecker checker(*this, binder);
  for (auto [i, type] : llvm::enumerate(getSegments().getTypes()))
    if (failed(checker.check("segment", i, spec.components[i], type)))
      return failure();
  FailureOr<llvm::SmallVector<int64_t>> lead =
      verifyAxisDropped(*this, checker.getLead(), getAxis(), getCuSeqlens());
  if (failed(lead))
    return failure();
  for (auto [i, result] : llvm::enumerate(getTotals())) {
    auto tensor = cast<RankedTensorType>(result.getType());
    llvm::SmallVector<int64_t> expected(*lead);
    llvm::append_range(expected, binder.resolve(spec.components[i]));
    if (!shapesCompatible(tensor.getShape(), expected))
      return emitOpError() << "result #" << i << " ('"
                           << spec.components[i].name << "') has shape "
                           << shapeToString(tensor.getShape()) << " but needs "
                           << shapeToString(expected);
    Type element =
        cast<RankedTensorType>(getSegments()[i].getType()).getElementType();
    if (tensor.getElementType() != element)
      return emitOpError() << "result #" << i << " ('"
                           << spec.components[i].name << "') element type "
                           << tensor.getElementType()
                           << " differs from its segment's " << element;
  }
  return success();
}

LogicalResult ReadoutOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  const MonoidReadout *num = spec.findReadout("num");
  if (!num)
    return emitOpError() << "monoid '" << spec.name << "' has no 'num' readout";
  llvm::SmallVector<unsigned> readInputs = spec.getReadoutInputs();
  llvm::SmallVector<unsigned> carried = spec.getCarryComponents();
  if (getInputs().size() != readInputs.size())
    return emitOpError() << "monoid '" << spec.name << "' readouts read "
                         << readInputs.size() << " inputs ("
                         << slotNames(spec, readInputs, true) << "), got "
                         << getInputs().size();
  if (getState().size() != carried.size())
    return emitOpError() << "monoid '" << spec.name << "' carries "
                         << carried.size() << " components ("
                         << slotNames(spec, carried, false) << "), got "
                         << getState().size() << " state tensors";
  if (failed(verifyOptionAttrs(*this)))
    return failure();
  MonoidDimBinder binder;
  SlotChecker checker(*this, binder);
  for (auto [i, type] : llvm::enumerate(getState().getTypes()))
    if (failed(checker.check("state", i, spec.components[carried[i]], type)))
      return failure();
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (failed(checker.check("input", i, spec.inputs[readInputs[i]],
                             input.getType())))
      return failure();

  // The output is [lead..., shape of num].
  std::string error;
  FailureOr<MonoidMatrixShape> shape = spec.inferTermShape(num->expr[0], error);
  llvm::SmallVector<int64_t> expected(checker.getLead());
  for (const std::string &symbol : {shape->rows, shape->cols})
    if (symbol != "1")
      expected.push_back(binder.lookup(symbol));
  RankedTensorType out = getOutput().getType();
  if (!shapesCompatible(out.getShape(), expected))
    return emitOpError() << "'output' has shape "
                         << shapeToString(out.getShape()) << " but needs "
                         << shapeToString(expected);
  if (!isa<FloatType>(out.getElementType()))
    return emitOpError() << "'output' must be a float tensor";
  return success();
}

LogicalResult PrefixVjpOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  const MonoidReadout *num = spec.findReadout("num");
  if (!num)
    return emitOpError() << "monoid '" << spec.name << "' has no 'num' readout";
  if (getInputs().size() != spec.inputs.size())
    return emitOpError() << "monoid '" << spec.name << "' has "
                         << spec.inputs.size() << " inputs, got "
                         << getInputs().size();
  llvm::SmallVector<unsigned> carried = spec.getCarryComponents();
  size_t k = carried.size();
  if (!getInit().empty() && getInit().size() != k)
    return emitOpError() << "expects " << k << " init tensors ("
                         << slotNames(spec, carried, false) << "), got "
                         << getInit().size();
  if (!getFinalCotangent().empty() && getFinalCotangent().size() != k)
    return emitOpError() << "expects " << k << " final_cotangent tensors ("
                         << slotNames(spec, carried, false) << "), got "
                         << getFinalCotangent().size();
  size_t expectedGradients =
      getInputs().size() + getInit().size() + getHeadParams().size();
  if (getGradients().size() != expectedGradients)
    return emitOpError() << "needs one gradient per input ("
                         << getInputs().size() << "), per init tensor ("
                         << getInit().size() << ") and per head_params tensor ("
                         << getHeadParams().size() << "), got "
                         << getGradients().size();
  MonoidDimBinder binder;
  // [B, T, H] before every slot.
  SlotChecker checker(*this, binder, /*minLead=*/3);
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    if (failed(checker.check("input", i, spec.inputs[i], input.getType())))
      return failure();
    if (cast<RankedTensorType>(input.getType()).getRank() !=
        int64_t(3 + spec.inputs[i].getRank()))
      return emitOpError() << "input #" << i << " ('" << spec.inputs[i].name
                           << "') needs exactly 3 leading dimensions [B, T, H]";
    if (getGradients()[i].getType() != input.getType())
      return emitOpError() << "gradient #" << i << " has type "
                           << getGradients()[i].getType()
                           << " but its input has " << input.getType();
  }
  std::string error;
  FailureOr<MonoidMatrixShape> shape = spec.inferTermShape(num->expr[0], error);
  if (failed(shape))
    return emitOpError() << error;
  llvm::SmallVector<int64_t> expected(checker.getLead());
  for (const std::string &symbol : {shape->rows, shape->cols})
    if (symbol != "1")
      expected.push_back(binder.lookup(symbol));
  auto cotangent = cast<RankedTensorType>(getCotangent().getType());
  if (!shapesCompatible(cotangent.getShape(), expected))
    return emitOpError() << "'cotangent' has shape "
                         << shapeToString(cotangent.getShape())
                         << " but the readout's output has "
                         << shapeToString(expected);
  if (!isa<FloatType>(cotangent.getElementType()))
    return emitOpError() << "'cotangent' must be a float tensor";
  // States: [B, H, component], f32; the init's gradients have their types.
  llvm::SmallVector<int64_t> stateLead = {expected[0], expected[2]};
  auto checkStates = [&](llvm::StringRef what,
                         ValueRange states) -> LogicalResult {
    for (auto [i, state] : llvm::enumerate(states)) {
      const MonoidSlot &slot = spec.components[carried[i]];
      auto type = cast<RankedTensorType>(state.getType());
      llvm::SmallVector<int64_t> shape(stateLead);
      llvm::append_range(shape, binder.resolve(slot));
      if (!shapesCompatible(type.getShape(), shape) ||
          !type.getElementType().isF32())
        return emitOpError()
               << what << " #" << i << " ('" << slot.name << "') has type "
               << type << " but needs " << shapeToString(shape) << " of f32";
    }
    return success();
  };
  if (failed(checkStates("init", getInit())) ||
      failed(checkStates("final_cotangent", getFinalCotangent())))
    return failure();
  for (auto [i, state] : llvm::enumerate(getInit()))
    if (getGradients()[getInputs().size() + i].getType() != state.getType())
      return emitOpError() << "the gradient of init #" << i << " has type "
                           << getGradients()[getInputs().size() + i].getType()
                           << " but init #" << i << " has " << state.getType();
  if (failed(verifyHeadParams(*this, spec, getHeadParams(), expected[2])))
    return failure();
  size_t first = getInputs().size() + getInit().size();
  for (auto [i, params] : llvm::enumerate(getHeadParams()))
    if (getGradients()[first + i].getType() != params.getType())
      return emitOpError() << "the gradient of head_params #" << i
                           << " has type "
                           << getGradients()[first + i].getType()
                           << " but head_params #" << i << " has "
                           << params.getType();
  return success();
}

/// LinSimp's backward ops' token operands: q, k, v, r, u and the output's
/// cotangent, all [B, T, H, ...] with the query's heads; q, k, r share d,
/// and v, u and the cotangent dv. Also the window and the scale.
static LogicalResult verifyLinSimpVjpTokens(Operation *op, Value query,
                                            Value key, Value value,
                                            Value anchorKey, Value anchorValue,
                                            Value cotangentValue,
                                            int64_t window, double scale) {
  if (window < 1)
    return op->emitOpError() << "'window' must be >= 1, got " << window;
  if (!std::isfinite(scale) || scale <= 0)
    return op->emitOpError()
           << "'scale' must be a finite positive number, got " << scale;
  auto type = [](Value x) { return cast<RankedTensorType>(x.getType()); };
  RankedTensorType q = type(query), k = type(key), v = type(value),
                   r = type(anchorKey), u = type(anchorValue),
                   cotangent = type(cotangentValue);
  const char *layout = "[B, T, H, D]";
  if (failed(verifyActivation(op, "query", q, 4, layout)) ||
      failed(verifyActivation(op, "key", k, 4, layout)) ||
      failed(verifyActivation(op, "value", v, 4, layout)) ||
      failed(verifyActivation(op, "anchor_key", r, 4, layout)) ||
      failed(verifyActivation(op, "anchor_value", u, 4, layout)) ||
      failed(verifyActivation(op, "cotangent", cotangent, 4, layout)))
    return failure();
  std::pair<llvm::StringRef, RankedTensorType> tokens[] = {
      {"key", k},
      {"value", v},
      {"anchor_key", r},
      {"anchor_value", u},
      {"cotangent", cotangent}};
  for (auto [name, t] : tokens)
    for (unsigned axis : {0u, 1u, 2u})
      if (failed(verifySameDim(op, name, t, "query", q, axis)))
        return failure();
  if (failed(verifySameDim(op, "key", k, "query", q, 3)) ||
      failed(verifySameDim(op, "anchor_key", r, "query", q, 3)) ||
      failed(verifySameDim(op, "anchor_value", u, "value", v, 3)) ||
      failed(verifySameDim(op, "cotangent", cotangent, "value", v, 3)))
    return failure();
  return success();
}

LogicalResult LinSimpExactVjpOp::verify() {
  if (failed(verifyLinSimpVjpTokens(*this, getQuery(), getKey(), getValue(),
                                    getAnchorKey(), getAnchorValue(),
                                    getCotangent(), getWindow(),
                                    getScale().convertToDouble())))
    return failure();
  Value operands[] = {getQuery(), getKey(), getValue(), getAnchorKey(),
                      getAnchorValue()};
  for (auto [i, operand] : llvm::enumerate(operands))
    if (getOperation()->getResult(i).getType() != operand.getType())
      return emitOpError() << "gradient #" << i << " has type "
                           << getOperation()->getResult(i).getType()
                           << " but its operand has " << operand.getType();
  return success();
}

LogicalResult AnchorVjpOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  if (!spec.findReadout("num") || !spec.findReadout("den") ||
      !spec.findInput("f") || !spec.findInput("phi") || !spec.findInput("v"))
    return emitOpError() << "monoid '" << spec.name
                         << "' needs inputs 'phi', 'v' and 'f' and readouts "
                            "'num' and 'den' (LinSimp's)";
  if (failed(verifyLinSimpVjpTokens(*this, getQuery(), getKey(), getValue(),
                                    getAnchorKey(), getAnchorValue(),
                                    getCotangent(), getWindow(),
                                    getScale().convertToDouble())))
    return failure();
  RankedTensorType q = getQuery().getType(), v = getValue().getType(),
                   omega = getOmega().getType();
  if (failed(verifyActivation(*this, "omega", omega, 2, "[m, d]")))
    return failure();
  if (sizesConflict(omega.getDimSize(1), q.getDimSize(3)))
    return emitOpError() << "'omega' feature size " << omega.getDimSize(1)
                         << " differs from 'query' feature size "
                         << q.getDimSize(3);

  // The state: M, a, then the anchor ring (r, u, validity), per [B, H].
  int64_t halo = getWindow() - 1, dv = v.getDimSize(3);
  int64_t m = omega.getDimSize(0);
  llvm::SmallVector<AttentionStateSlot> slots = {
      {"M", {m, dv}},
      {"a", {m}},
      {"anchor_r", {halo, q.getDimSize(3)}},
      {"anchor_u", {halo, dv}},
      {"anchor_valid", {halo}}};
  int64_t lead = q.getDimSize(0), heads = q.getDimSize(2);
  if (!getInit().empty() &&
      failed(verifyStateGroup(*this, "init", getInit().getTypes(), slots, lead,
                              heads)))
    return failure();
  if (!getFinalCotangent().empty() &&
      failed(verifyStateGroup(*this, "final_cotangent",
                              getFinalCotangent().getTypes(), slots, lead,
                              heads)))
    return failure();

  // One gradient per differentiated operand, of its type.
  llvm::SmallVector<Value> differentiated = {getQuery(),       getKey(),
                                             getValue(),       getAnchorKey(),
                                             getAnchorValue(), getOmega()};
  llvm::append_range(differentiated, getInit());
  if (getGradients().size() != differentiated.size())
    return emitOpError() << "needs one gradient per token operand and omega "
                            "(6) and per init tensor ("
                         << getInit().size() << "), got "
                         << getGradients().size();
  for (auto [i, operand] : llvm::enumerate(differentiated))
    if (getGradients()[i].getType() != operand.getType())
      return emitOpError() << "gradient #" << i << " has type "
                           << getGradients()[i].getType()
                           << " but its operand has " << operand.getType();
  return success();
}

LogicalResult RandomFeaturesOp::verify() {
  auto type = cast<RankedTensorType>(getOutput().getType());
  if (type.getRank() != 2 || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()))
    return emitOpError("result must be a static [m, d] tensor of floats, got ")
           << type;
  if (type.getDimSize(0) < 1 || type.getDimSize(1) < 1)
    return emitOpError("needs m >= 1 rows and d >= 1 columns, got ") << type;
  // The matrix becomes a constant in the IR; anything larger than a model's
  // feature matrices is a mistake.
  if (type.getNumElements() > (int64_t(1) << 24))
    return emitOpError("at most 2^24 elements, got ") << type.getNumElements();
  if (getSeedAttr().getInt() < 0)
    return emitOpError("seed must be >= 0, got ") << getSeedAttr().getInt();
  return success();
}

LogicalResult FeatureMapOp::verify() {
  RankedTensorType input = getInput().getType(), omega = getOmega().getType();
  RankedTensorType out = getOutput().getType();
  if (input.getRank() < 1)
    return emitOpError() << "'input' must have rank >= 1";
  if (failed(verifyActivation(*this, "omega", omega, 2, "[m, d]")))
    return failure();
  if (sizesConflict(omega.getDimSize(1), input.getDimSize(input.getRank() - 1)))
    return emitOpError() << "'omega' feature size " << omega.getDimSize(1)
                         << " differs from 'input' feature size "
                         << input.getDimSize(input.getRank() - 1);
  llvm::SmallVector<int64_t> expected(input.getShape().drop_back());
  expected.push_back(omega.getDimSize(0));
  if (!shapesCompatible(out.getShape(), expected))
    return emitOpError() << "'output' has shape "
                         << shapeToString(out.getShape()) << " but needs "
                         << shapeToString(expected);
  if (!isa<FloatType>(input.getElementType()) ||
      !isa<FloatType>(out.getElementType()))
    return emitOpError() << "'input' and 'output' must be float tensors";
  return verifyOptionAttrs(*this);
}

LogicalResult AnchorReadoutOp::verify() {
  const MonoidSpec &spec = getMonoid().getSpec();
  if (!spec.findReadout("num") || !spec.findReadout("den") ||
      !spec.findInput("f"))
    return emitOpError() << "monoid '" << spec.name
                         << "' needs readouts 'num' and 'den' of an input "
                            "'f' (the anchor feature)";
  if (failed(verifyOptionAttrs(*this)))
    return failure();
  RankedTensorType q = getQuery().getType(), r = getAnchorKey().getType();
  RankedTensorType u = getAnchorValue().getType();
  RankedTensorType omega = getOmega().getType();
  const char *layout = "[B, T, H, D]";
  if (failed(verifyActivation(*this, "query", q, 4, layout)) ||
      failed(verifyActivation(*this, "anchor_key", r, 4, layout)) ||
      failed(verifyActivation(*this, "anchor_value", u, 4, layout)) ||
      failed(verifyActivation(*this, "omega", omega, 2, "[m, d]")))
    return failure();
  for (unsigned axis : {0u, 1u})
    if (failed(verifySameDim(*this, "anchor_key", r, "query", q, axis)) ||
        failed(verifySameDim(*this, "anchor_value", u, "query", q, axis)))
      return failure();
  if (failed(verifySameDim(*this, "anchor_key", r, "query", q, 3)) ||
      failed(verifySameDim(*this, "anchor_value", u, "anchor_key", r, 2)))
    return failure();
  if (sizesConflict(omega.getDimSize(1), q.getDimSize(3)))
    return emitOpError() << "'omega' feature size " << omega.getDimSize(1)
                         << " differs from 'query' feature size "
                         << q.getDimSize(3);

  llvm::SmallVector<unsigned> carried = spec.getCarryComponents();
  if (getState().size() != carried.size())
    return emitOpError() << "monoid '" << spec.name << "' carries "
                         << carried.size() << " components, got "
                         << getState().size() << " state tensors";
  MonoidDimBinder binder;
  std::string error;
  (void)binder.bind({"", {"m"}, false}, {omega.getDimSize(0)}, error);
  SlotChecker checker(*this, binder);
  checker.setLead({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2)});
  for (auto [i, type] : llvm::enumerate(getState().getTypes()))
    if (failed(checker.check("state", i, spec.components[carried[i]], type)))
      return failure();

  int64_t dv = u.getDimSize(3);
  RankedTensorType out = getOutput().getType();
  llvm::SmallVector<int64_t> expectedOut = {q.getDimSize(0), q.getDimSize(1),
                                            q.getDimSize(2), dv};
  if (!shapesCompatible(out.getShape(), expectedOut))
    return emitOpError() << "'output' has shape "
                         << shapeToString(out.getShape()) << " but needs "
                         << shapeToString(expectedOut);

  int64_t lead = q.getDimSize(0);
  if (Value cu = getCuSeqlens()) {
    FailureOr<int64_t> sequences = verifyCuSeqlens(*this, cu, lead);
    if (failed(sequences))
      return failure();
    lead = *sequences;
  }
  int64_t halo = getWindow() - 1;
  int64_t heads = q.getDimSize(2);
  llvm::SmallVector<AttentionStateSlot> anchorSlots = {
      {"anchor_r", {halo, q.getDimSize(3)}},
      {"anchor_u", {halo, dv}},
      {"anchor_valid", {halo}}};
  if (!getAnchors().empty() &&
      failed(verifyStateGroup(*this, "anchors", getAnchors().getTypes(),
                              anchorSlots, lead, heads)))
    return failure();
  if (!getFinalAnchors().empty() &&
      failed(verifyStateGroup(*this, "final_anchors",
                              getFinalAnchors().getTypes(), anchorSlots, lead,
                              heads)))
    return failure();
  return success();
}
