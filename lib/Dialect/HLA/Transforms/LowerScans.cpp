//===- LowerScans.cpp - hla.scan as loops of hla.combine --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-lower-scans turns every hla.scan (and hla.total) into loops whose body
// is hla.combine on slices, with one of two schedules (a total: sequential):
//
//   sequential  one carry, combined with each element in turn: N combines,
//               no parallelism along the axis (the other axes stay batched);
//   blelloch    the work-efficient up-sweep / down-sweep over a power-of-two
//               padded array: about 2N combines in 2 log2 N levels, each level
//               an scf.forall over independent pairs.
//
// `auto` picks Blelloch when the scan is long and the batch is too small to
// keep the machine busy (see chooseSchedule). Both give the same numbers up to
// rounding: the monoid is associative (hla-verify-algebra checks it).
//
// The carry and prefixes hold only the carried components; non-carried
// components of a left operand are never read by a carried result, so they
// are left uninitialised and every combine result nobody reads is dead code.
//
//===----------------------------------------------------------------------===//

#include "TileBuilder.h"
#include "hla/Dialect/HLA/IR/HLAAttrs.h"

#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "hla-lower-scans"

namespace mlir::hla {
#define GEN_PASS_DEF_HLALOWERSCANSPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// Slicing helpers for tensors [lead..., component shape] along one axis.
class AxisSlicer {
public:
  AxisSlicer(OpBuilder &b, Location loc, unsigned axis)
      : b(b), loc(loc), axis(axis) {}

  /// The type of `tensor` without the scan axis.
  RankedTensorType dropAxis(Type type) const {
    auto t = cast<RankedTensorType>(type);
    llvm::SmallVector<int64_t> shape(t.getShape());
    shape.erase(shape.begin() + axis);
    return RankedTensorType::get(shape, t.getElementType());
  }

  /// tensor[..., i, ...] with the axis dropped.
  Value extract(Value tensor, OpFoldResult i) {
    auto t = cast<RankedTensorType>(tensor.getType());
    llvm::SmallVector<OpFoldResult> offsets, sizes, strides;
    for (int64_t d = 0; d < t.getRank(); ++d) {
      offsets.push_back(d == int64_t(axis) ? i : b.getIndexAttr(0));
      sizes.push_back(d == int64_t(axis) ? b.getIndexAttr(1)
                                         : b.getIndexAttr(t.getDimSize(d)));
      strides.push_back(b.getIndexAttr(1));
    }
    return tensor::ExtractSliceOp::create(b, loc, dropAxis(t), tensor, offsets,
                                          sizes, strides);
  }

  /// Offsets/sizes/strides that place an axis-dropped slice at index i.
  void placement(RankedTensorType full, OpFoldResult i,
                 llvm::SmallVector<OpFoldResult> &offsets,
                 llvm::SmallVector<OpFoldResult> &sizes,
                 llvm::SmallVector<OpFoldResult> &strides) {
    for (int64_t d = 0; d < full.getRank(); ++d) {
      offsets.push_back(d == int64_t(axis) ? i : b.getIndexAttr(0));
      sizes.push_back(d == int64_t(axis) ? b.getIndexAttr(1)
                                         : b.getIndexAttr(full.getDimSize(d)));
      strides.push_back(b.getIndexAttr(1));
    }
  }

  Value insert(Value slice, Value tensor, OpFoldResult i) {
    llvm::SmallVector<OpFoldResult> offsets, sizes, strides;
    placement(cast<RankedTensorType>(tensor.getType()), i, offsets, sizes,
              strides);
    return tensor::InsertSliceOp::create(b, loc, slice, tensor, offsets, sizes,
                                         strides);
  }

  void parallelInsert(Value slice, Value tensor, OpFoldResult i) {
    llvm::SmallVector<OpFoldResult> offsets, sizes, strides;
    placement(cast<RankedTensorType>(tensor.getType()), i, offsets, sizes,
              strides);
    tensor::ParallelInsertSliceOp::create(b, loc, slice, tensor, offsets, sizes,
                                          strides);
  }

private:
  OpBuilder &b;
  Location loc;
  unsigned axis;
};

class ScanLowering {
public:
  ScanLowering(ScanOp scan) : scan(scan), spec(scan.getMonoid().getSpec()) {
    carried = spec.getCarryComponents();
  }

  LogicalResult lowerSequential();
  /// Sequential, restarting at every packed-sequence offset.
  LogicalResult lowerSequentialPacked();
  LogicalResult lowerBlelloch();

private:
  llvm::SmallVector<Value> combineCarried(OpBuilder &b, Location loc,
                                          ValueRange lhsCarried,
                                          ValueRange rhsFull,
                                          llvm::ArrayRef<Type> fullTypes) {
    return ::mlir::hla::combineCarried(b, loc, scan.getMonoid(), lhsCarried,
                                       rhsFull, fullTypes);
  }
  /// The initial carry: the init operands, or the identity.
  llvm::SmallVector<Value> initialCarry(OpBuilder &b, Location loc,
                                        AxisSlicer &slicer);

  ScanOp scan;
  const MonoidSpec &spec;
  llvm::SmallVector<unsigned> carried;
};

llvm::SmallVector<Value> ScanLowering::initialCarry(OpBuilder &b, Location loc,
                                                    AxisSlicer &slicer) {
  if (!scan.getInit().empty())
    return llvm::to_vector(scan.getInit());
  llvm::SmallVector<Value> carry;
  for (unsigned c : carried)
    carry.push_back(buildMonoidIdentity(
        b, loc, spec, c, slicer.dropAxis(scan.getSegments()[c].getType())));
  return carry;
}

LogicalResult ScanLowering::lowerSequential() {
  OpBuilder b(scan);
  Location loc = scan.getLoc();
  unsigned axis = scan.getAxis();
  AxisSlicer slicer(b, loc, axis);
  auto firstType = cast<RankedTensorType>(scan.getSegments()[0].getType());
  int64_t length = firstType.getDimSize(axis);
  llvm::SmallVector<Type> sliceTypes;
  for (Value s : scan.getSegments())
    sliceTypes.push_back(slicer.dropAxis(s.getType()));

  llvm::SmallVector<Value> carry0 = initialCarry(b, loc, slicer);
  llvm::SmallVector<Value> prefix0;
  for (Value r : scan.getPrefix()) {
    auto t = cast<RankedTensorType>(r.getType());
    prefix0.push_back(
        tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType()));
  }
  llvm::SmallVector<Value> iterInit(carry0);
  llvm::append_range(iterInit, prefix0);
  size_t k = carried.size();
  bool exclusive = scan.getExclusive();

  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(b, loc, length);
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, iterInit,
      [&](OpBuilder &nb, Location l, Value i, ValueRange iter) {
        AxisSlicer s(nb, l, axis);
        ValueRange carry = iter.take_front(k);
        ValueRange prefix = iter.drop_front(k);
        llvm::SmallVector<Value> segment;
        for (Value seg : scan.getSegments())
          segment.push_back(s.extract(seg, i));
        llvm::SmallVector<Value> next =
            combineCarried(nb, l, carry, segment, sliceTypes);
        llvm::SmallVector<Value> yielded(next);
        ValueRange stored = exclusive ? carry : ValueRange(next);
        for (auto [value, tensor] : llvm::zip(stored, prefix))
          yielded.push_back(s.insert(value, tensor, i));
        scf::YieldOp::create(nb, l, yielded);
      });
  for (auto [old, now] :
       llvm::zip(scan.getPrefix(), loop.getResults().drop_front(k)))
    old.replaceAllUsesWith(now);
  for (auto [old, now] :
       llvm::zip(scan.getFinal(), loop.getResults().take_front(k)))
    old.replaceAllUsesWith(now);
  scan.erase();
  return success();
}

LogicalResult ScanLowering::lowerSequentialPacked() {
  // One carry per packed sequence: for s, positions cu[s] .. cu[s+1]. Each
  // sequence starts from its own initial state (or the identity) and ends in
  // its own final state.
  OpBuilder b(scan);
  Location loc = scan.getLoc();
  unsigned axis = scan.getAxis();
  AxisSlicer slicer(b, loc, axis);
  Value cu = scan.getCuSeqlens();
  int64_t sequences = cast<RankedTensorType>(cu.getType()).getDimSize(0) - 1;
  size_t k = carried.size();
  bool exclusive = scan.getExclusive();
  llvm::SmallVector<Type> sliceTypes;
  for (Value seg : scan.getSegments())
    sliceTypes.push_back(slicer.dropAxis(seg.getType()));

  // The finals' leading dimension counts sequences: [N, ...]. Slice i of
  // them (and of init) is a carry, [1, ...] with the batch of one kept.
  auto carryTypeOf = [&](unsigned i) {
    return cast<RankedTensorType>(sliceTypes[carried[i]]);
  };
  auto perSequence = [&](OpBuilder &nb, Location l, Value tensor, Value s,
                         RankedTensorType slice) -> Value {
    auto t = cast<RankedTensorType>(tensor.getType());
    llvm::SmallVector<OpFoldResult> offsets = {s}, sizes = {nb.getIndexAttr(1)},
                                    strides = {nb.getIndexAttr(1)};
    for (int64_t d = 1; d < t.getRank(); ++d) {
      offsets.push_back(nb.getIndexAttr(0));
      sizes.push_back(nb.getIndexAttr(t.getDimSize(d)));
      strides.push_back(nb.getIndexAttr(1));
    }
    return tensor::ExtractSliceOp::create(nb, l, slice, tensor, offsets, sizes,
                                          strides);
  };
  auto placeSequence = [&](OpBuilder &nb, Location l, Value slice, Value dest,
                           Value s) -> Value {
    auto t = cast<RankedTensorType>(dest.getType());
    llvm::SmallVector<OpFoldResult> offsets = {s}, sizes = {nb.getIndexAttr(1)},
                                    strides = {nb.getIndexAttr(1)};
    for (int64_t d = 1; d < t.getRank(); ++d) {
      offsets.push_back(nb.getIndexAttr(0));
      sizes.push_back(nb.getIndexAttr(t.getDimSize(d)));
      strides.push_back(nb.getIndexAttr(1));
    }
    return tensor::InsertSliceOp::create(nb, l, slice, dest, offsets, sizes,
                                         strides);
  };
  auto offsetAt = [&](OpBuilder &nb, Location l, Value i) -> Value {
    Value v = tensor::ExtractOp::create(nb, l, cu, ValueRange{i});
    return arith::IndexCastOp::create(nb, l, nb.getIndexType(), v);
  };

  llvm::SmallVector<Value> iterInit;
  for (Value r : scan.getPrefix()) {
    auto t = cast<RankedTensorType>(r.getType());
    iterInit.push_back(
        tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType()));
  }
  for (unsigned i = 0; i < k; ++i) {
    auto t = carryTypeOf(i);
    llvm::SmallVector<int64_t> shape(t.getShape());
    shape[0] = sequences;
    iterInit.push_back(
        tensor::EmptyOp::create(b, loc, shape, t.getElementType()));
  }
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto outer = scf::ForOp::create(
      b, loc, c0, arith::ConstantIndexOp::create(b, loc, sequences), c1,
      iterInit, [&](OpBuilder &nb, Location l, Value s, ValueRange iter) {
        ValueRange prefix = iter.take_front(k);
        ValueRange finals = iter.drop_front(k);
        llvm::SmallVector<Value> carry0;
        for (unsigned i = 0; i < k; ++i)
          carry0.push_back(
              scan.getInit().empty()
                  ? buildMonoidIdentity(nb, l, spec, carried[i], carryTypeOf(i))
                  : perSequence(nb, l, scan.getInit()[i], s, carryTypeOf(i)));
        Value begin = offsetAt(nb, l, s);
        Value end = offsetAt(nb, l, arith::AddIOp::create(nb, l, s, c1));
        llvm::SmallVector<Value> innerInit(carry0);
        llvm::append_range(innerInit, prefix);
        auto inner = scf::ForOp::create(
            nb, l, begin, end, c1, innerInit,
            [&](OpBuilder &ib, Location il, Value i, ValueRange it) {
              AxisSlicer sl(ib, il, axis);
              ValueRange carry = it.take_front(k);
              ValueRange prefixes = it.drop_front(k);
              llvm::SmallVector<Value> segment;
              for (Value seg : scan.getSegments())
                segment.push_back(sl.extract(seg, i));
              llvm::SmallVector<Value> next =
                  combineCarried(ib, il, carry, segment, sliceTypes);
              llvm::SmallVector<Value> yielded(next);
              ValueRange stored = exclusive ? carry : ValueRange(next);
              for (auto [value, tensor] : llvm::zip(stored, prefixes))
                yielded.push_back(sl.insert(value, tensor, i));
              scf::YieldOp::create(ib, il, yielded);
            });
        llvm::SmallVector<Value> yielded(inner.getResults().drop_front(k));
        for (auto [i, final] : llvm::enumerate(finals))
          yielded.push_back(placeSequence(nb, l, inner.getResult(i), final, s));
        scf::YieldOp::create(nb, l, yielded);
      });
  for (auto [old, now] :
       llvm::zip(scan.getPrefix(), outer.getResults().take_front(k)))
    old.replaceAllUsesWith(now);
  for (auto [old, now] :
       llvm::zip(scan.getFinal(), outer.getResults().drop_front(k)))
    old.replaceAllUsesWith(now);
  scan.erase();
  return success();
}

LogicalResult ScanLowering::lowerBlelloch() {
  OpBuilder b(scan);
  Location loc = scan.getLoc();
  unsigned axis = scan.getAxis();
  AxisSlicer slicer(b, loc, axis);
  auto firstType = cast<RankedTensorType>(scan.getSegments()[0].getType());
  int64_t length = firstType.getDimSize(axis);
  int64_t size = 1;
  while (size < length)
    size *= 2;
  llvm::SmallVector<Type> sliceTypes;
  for (Value s : scan.getSegments())
    sliceTypes.push_back(slicer.dropAxis(s.getType()));

  // The tree array A (every component), padded with identities to a power
  // of two.
  auto paddedType = [&](Type t) {
    auto tt = cast<RankedTensorType>(t);
    llvm::SmallVector<int64_t> shape(tt.getShape());
    shape[axis] = size;
    return RankedTensorType::get(shape, tt.getElementType());
  };
  llvm::SmallVector<Value> tree;
  for (auto [c, seg] : llvm::enumerate(scan.getSegments())) {
    RankedTensorType t = paddedType(seg.getType());
    if (size == length) {
      tree.push_back(seg);
      continue;
    }
    Value padded = buildMonoidIdentity(b, loc, spec, c, t);
    llvm::SmallVector<OpFoldResult> offsets, sizes, strides;
    auto st = cast<RankedTensorType>(seg.getType());
    for (int64_t d = 0; d < st.getRank(); ++d) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(st.getDimSize(d)));
      strides.push_back(b.getIndexAttr(1));
    }
    tree.push_back(tensor::InsertSliceOp::create(b, loc, seg, padded, offsets,
                                                 sizes, strides));
  }

  // Up-sweep: at stride d, A[(2j+2)d − 1] = A[(2j+1)d − 1] ∘ A[(2j+2)d − 1].
  auto levelForall = [&](int64_t count, ValueRange outs,
                         llvm::function_ref<void(OpBuilder &, Location, Value,
                                                 ValueRange, scf::ForallOp)>
                             body) {
    auto forall = scf::ForallOp::create(
        b, loc, llvm::ArrayRef<OpFoldResult>{b.getIndexAttr(count)}, outs,
        std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    body(b, loc, forall.getBody()->getArgument(0),
         forall.getBody()->getArguments().drop_front(), forall);
    return forall;
  };
  auto indexAt = [](OpBuilder &nb, Location l, Value j, int64_t d,
                    int64_t offset) -> Value {
    // (2j + 2)d − 1 − offset
    Value twoD = arith::ConstantIndexOp::create(nb, l, 2 * d);
    Value base = arith::MulIOp::create(nb, l, j, twoD);
    return arith::AddIOp::create(
        nb, l, base, arith::ConstantIndexOp::create(nb, l, 2 * d - 1 - offset));
  };
  for (int64_t d = 1; d < size; d *= 2) {
    auto forall = levelForall(
        size / (2 * d), tree,
        [&](OpBuilder &nb, Location l, Value j, ValueRange outs,
            scf::ForallOp op) {
          AxisSlicer s(nb, l, axis);
          Value right = indexAt(nb, l, j, d, 0);
          Value left = indexAt(nb, l, j, d, d);
          llvm::SmallVector<Value> lhs, rhs;
          for (Value a : outs) {
            lhs.push_back(s.extract(a, left));
            rhs.push_back(s.extract(a, right));
          }
          auto combine = CombineOp::create(nb, l, TypeRange(sliceTypes),
                                           scan.getMonoid(), lhs, rhs);
          OpBuilder::InsertionGuard guard(nb);
          nb.setInsertionPointToStart(op.getTerminator().getBody());
          AxisSlicer ps(nb, l, axis);
          for (auto [value, out] : llvm::zip(combine.getResults(), outs))
            ps.parallelInsert(value, out, right);
        });
    tree.assign(forall.getResults().begin(), forall.getResults().end());
  }

  // Down-sweep over the prefixes X (carried components): X[size−1] = init;
  // at stride d, X[left] = X[right], X[right] = X[right] ∘ A[left].
  llvm::SmallVector<Value> init = initialCarry(b, loc, slicer);
  llvm::SmallVector<Value> prefixes;
  for (auto [i, c] : llvm::enumerate(carried)) {
    RankedTensorType t = paddedType(scan.getSegments()[c].getType());
    Value x = tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
    prefixes.push_back(slicer.insert(init[i], x, b.getIndexAttr(size - 1)));
  }
  // Each level is two foralls, one writing the left slots and one the
  // right slots: scf.forall's folding of single-iteration loops assumes one
  // parallel_insert_slice per shared output.
  for (int64_t d = size / 2; d >= 1; d /= 2) {
    // The right slots first: X[right] = X[right] ∘ A[left] (reads only
    // slots it writes).
    auto rights =
        levelForall(size / (2 * d), prefixes,
                    [&](OpBuilder &nb, Location l, Value j, ValueRange outs,
                        scf::ForallOp op) {
                      AxisSlicer s(nb, l, axis);
                      Value right = indexAt(nb, l, j, d, 0);
                      Value left = indexAt(nb, l, j, d, d);
                      llvm::SmallVector<Value> parent, leftSummary;
                      for (Value x : outs)
                        parent.push_back(s.extract(x, right));
                      for (Value a : tree)
                        leftSummary.push_back(s.extract(a, left));
                      llvm::SmallVector<Value> combined = combineCarried(
                          nb, l, parent, leftSummary, sliceTypes);
                      OpBuilder::InsertionGuard guard(nb);
                      nb.setInsertionPointToStart(op.getTerminator().getBody());
                      AxisSlicer ps(nb, l, axis);
                      for (auto [value, out] : llvm::zip(combined, outs))
                        ps.parallelInsert(value, out, right);
                    });
    // Then the left slots take the old right values: X[left] = X_old[right].
    llvm::SmallVector<Value> before(prefixes);
    auto lefts =
        levelForall(size / (2 * d), rights.getResults(),
                    [&](OpBuilder &nb, Location l, Value j, ValueRange outs,
                        scf::ForallOp op) {
                      AxisSlicer s(nb, l, axis);
                      Value right = indexAt(nb, l, j, d, 0);
                      Value left = indexAt(nb, l, j, d, d);
                      llvm::SmallVector<Value> parent;
                      for (Value x : before)
                        parent.push_back(s.extract(x, right));
                      OpBuilder::InsertionGuard guard(nb);
                      nb.setInsertionPointToStart(op.getTerminator().getBody());
                      AxisSlicer ps(nb, l, axis);
                      for (auto [value, out] : llvm::zip(parent, outs))
                        ps.parallelInsert(value, out, left);
                    });
    prefixes.assign(lefts.getResults().begin(), lefts.getResults().end());
  }

  // Exclusive prefixes are X[0, length); inclusive ones add each element.
  llvm::SmallVector<Value> results;
  for (auto [i, c] : llvm::enumerate(carried)) {
    auto t = cast<RankedTensorType>(scan.getPrefix()[i].getType());
    Value x = prefixes[i];
    if (size != length) {
      llvm::SmallVector<OpFoldResult> offsets, sizes, strides;
      for (int64_t dd = 0; dd < t.getRank(); ++dd) {
        offsets.push_back(b.getIndexAttr(0));
        sizes.push_back(b.getIndexAttr(t.getDimSize(dd)));
        strides.push_back(b.getIndexAttr(1));
      }
      x = tensor::ExtractSliceOp::create(b, loc, t, x, offsets, sizes, strides);
    }
    results.push_back(x);
  }
  if (!scan.getExclusive()) {
    llvm::SmallVector<Value> outs;
    for (Value r : scan.getPrefix()) {
      auto t = cast<RankedTensorType>(r.getType());
      outs.push_back(
          tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType()));
    }
    llvm::SmallVector<Value> exclusive(results);
    auto forall =
        levelForall(length, outs,
                    [&](OpBuilder &nb, Location l, Value i, ValueRange outArgs,
                        scf::ForallOp op) {
                      AxisSlicer s(nb, l, axis);
                      llvm::SmallVector<Value> parent, element;
                      for (Value x : exclusive)
                        parent.push_back(s.extract(x, i));
                      for (Value seg : scan.getSegments())
                        element.push_back(s.extract(seg, i));
                      llvm::SmallVector<Value> combined =
                          combineCarried(nb, l, parent, element, sliceTypes);
                      OpBuilder::InsertionGuard guard(nb);
                      nb.setInsertionPointToStart(op.getTerminator().getBody());
                      AxisSlicer ps(nb, l, axis);
                      for (auto [value, out] : llvm::zip(combined, outArgs))
                        ps.parallelInsert(value, out, i);
                    });
    results.assign(forall.getResults().begin(), forall.getResults().end());
  }
  for (auto [old, now] : llvm::zip(scan.getPrefix(), results))
    old.replaceAllUsesWith(now);

  // The final state: init ∘ (the root of the up-sweep, the total).
  if (!scan.getFinal().empty()) {
    llvm::SmallVector<Value> total;
    for (Value a : tree)
      total.push_back(slicer.extract(a, b.getIndexAttr(size - 1)));
    llvm::SmallVector<Value> final =
        combineCarried(b, loc, init, total, sliceTypes);
    for (auto [old, now] : llvm::zip(scan.getFinal(), final))
      old.replaceAllUsesWith(now);
  }
  scan.erase();
  return success();
}

/// Floating-point operations of one combine of two elements (every
/// component, every term, matrix chains evaluated left to right).
static double combineFlops(ScanOp scan) {
  const MonoidSpec &spec = scan.getMonoid().getSpec();
  // The symbols' sizes, from the segments' trailing dimensions.
  MonoidDimBinder binder;
  for (auto [c, seg] : llvm::enumerate(scan.getSegments())) {
    auto type = cast<RankedTensorType>(seg.getType());
    std::string ignored;
    (void)binder.bind(spec.components[c],
                      type.getShape().take_back(spec.components[c].getRank()),
                      ignored);
  }
  auto extent = [&](const std::string &symbol) -> double {
    if (symbol == "1")
      return 1.0;
    int64_t v = binder.lookup(symbol);
    return ShapedType::isDynamic(v) ? 64.0 : double(v);
  };
  double flops = 0.0;
  for (const MonoidExpr &rule : spec.combine) {
    for (const MonoidTerm &term : rule) {
      std::optional<std::pair<double, double>> current;
      for (const MonoidFactor &f : term.factors) {
        const MonoidSlot *slot = spec.getFactorSlot(f);
        if (!slot || slot->getRank() == 0)
          continue;
        MonoidMatrixShape shape = MonoidSpec::getMatrixShape(*slot);
        if (f.transposed)
          std::swap(shape.rows, shape.cols);
        std::pair<double, double> next = {extent(shape.rows),
                                          extent(shape.cols)};
        if (current) {
          flops += 2.0 * current->first * current->second * next.second;
          current->second = next.second;
        } else {
          current = next;
        }
      }
      if (current)
        flops += current->first * current->second; // the sum
    }
  }
  return flops;
}

/// `auto`: the Blelloch schedule does about twice the combines of the
/// sequential one but runs them in 2 log2 N parallel levels. It pays when
/// the other axes hold fewer independent scans than there are threads (so
/// the sequential scan leaves threads idle), the scan is long enough to
/// split, and its sequential work (N combines of this monoid's state) is
/// large enough to matter next to the chunk phases (about 2 MFLOP, a
/// millisecond's fraction on one core).
static bool chooseBlelloch(ScanOp scan, int64_t threads) {
  auto type = cast<RankedTensorType>(scan.getSegments()[0].getType());
  int64_t length = type.getDimSize(scan.getAxis());
  const MonoidSpec &spec = scan.getMonoid().getSpec();
  int64_t batch = 1;
  int64_t lead = type.getRank() - spec.components[0].getRank();
  for (int64_t d = 0; d < lead; ++d)
    if (d != int64_t(scan.getAxis()))
      batch *= type.getDimSize(d);
  double sequentialWork = double(length) * combineFlops(scan);
  return batch < threads && length >= 4 * threads && sequentialWork >= 2e6;
}

/// An hla.total left by hla-chunk (segments that are not a chunked chain):
/// every component folded along the axis from the identity, one combine per
/// element.
static LogicalResult lowerTotal(TotalOp total) {
  auto type = cast<RankedTensorType>(total.getSegments()[0].getType());
  if (!type.hasStaticShape())
    return total.emitError() << "hla-lower-scans: needs static shapes";
  if (total.getCuSeqlens())
    return total.emitError()
           << "hla-lower-scans: a total over packed sequences (cu_seqlens) "
              "is lowered only as hla-chunk's segment -> total chain";
  const MonoidSpec &spec = total.getMonoid().getSpec();
  OpBuilder b(total);
  Location loc = total.getLoc();
  unsigned axis = total.getAxis();
  llvm::SmallVector<Type> sliceTypes(total.getTotals().getTypes());
  llvm::SmallVector<Value> identity;
  for (auto [c, t] : llvm::enumerate(sliceTypes))
    identity.push_back(
        buildMonoidIdentity(b, loc, spec, c, cast<RankedTensorType>(t)));
  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(b, loc, type.getDimSize(axis));
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, identity,
      [&](OpBuilder &nb, Location l, Value i, ValueRange carry) {
        AxisSlicer s(nb, l, axis);
        llvm::SmallVector<Value> segment;
        for (Value seg : total.getSegments())
          segment.push_back(s.extract(seg, i));
        auto combine = CombineOp::create(nb, l, TypeRange(sliceTypes),
                                         total.getMonoid(), carry, segment);
        scf::YieldOp::create(nb, l, combine.getResults());
      });
  total.replaceAllUsesWith(loop.getResults());
  total.erase();
  return success();
}

struct HLALowerScansPass
    : public hla::impl::HLALowerScansPassBase<HLALowerScansPass> {
  using HLALowerScansPassBase::HLALowerScansPassBase;

  void runOnOperation() override {
    llvm::SmallVector<TotalOp> totals;
    getOperation()->walk([&](TotalOp op) { totals.push_back(op); });
    for (TotalOp total : totals)
      if (failed(lowerTotal(total)))
        return signalPassFailure();
    llvm::SmallVector<ScanOp> scans;
    getOperation()->walk([&](ScanOp op) { scans.push_back(op); });
    for (ScanOp scan : scans) {
      if (scan.getCuSeqlens()) {
        // Packed sequences are independent scans of run-time lengths; they
        // run one after the other (the chunk phases around the scan stay
        // parallel).
        if (schedule == ScanSchedule::Blelloch) {
          scan.emitError() << "hla-lower-scans: the Blelloch schedule does "
                              "not support packed sequences (cu_seqlens); "
                              "use sequential or auto";
          return signalPassFailure();
        }
        if (failed(ScanLowering(scan).lowerSequentialPacked()))
          return signalPassFailure();
        continue;
      }
      auto type = cast<RankedTensorType>(scan.getSegments()[0].getType());
      if (!type.hasStaticShape()) {
        scan.emitError() << "hla-lower-scans: needs static shapes";
        return signalPassFailure();
      }
      bool blelloch =
          schedule == ScanSchedule::Blelloch ||
          (schedule == ScanSchedule::Auto && chooseBlelloch(scan, scanThreads));
      ScanLowering lowering(scan);
      if (failed(blelloch ? lowering.lowerBlelloch()
                          : lowering.lowerSequential()))
        return signalPassFailure();
    }
  }
};
} // namespace
