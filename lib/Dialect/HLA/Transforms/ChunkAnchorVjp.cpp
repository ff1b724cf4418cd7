//===- ChunkAnchorVjp.cpp - LinSimp's backward ------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla.anchor_vjp: the backward of LinSimp's favor chain (SEMANTICS.md §5),
// derived from the chunk's forward program as the gated delta rule's is
// (ReverseDiff.h). Per (batch entry, head):
//
//   1. a pass over the chunks saves the state (M, a) entering each;
//   2. a pass from the last chunk to the first carries λ, the cotangent of
//      the state leaving the chunk: λ_M, λ_a and λ_r, λ_u of the anchor
//      ring (the last W−1 anchors), from the final state's cotangent or
//      zero. For each chunk it
//      - recomputes the key features Φ = φ(k) and, one anchor offset at a
//        time, each query's shift μ (the largest feature exponent of its
//        real anchors) and the window's sums N = Σ_c u_c ⊙ num_c and
//        D = Σ_c den_c under it; o = N / D, so the sums' cotangents are
//        ḡ / D and −(ḡ · o) / D for the rows' cotangent ḡ;
//      - differentiates each offset's program (its anchors' features under
//        the fixed μ, which cancels in N / D, their num and den readouts,
//        u ⊙ num) in reverse, seeded with those: the window is a sum over
//        offsets, so each offset's reverse stands alone and the gradients
//        add up;
//      - differentiates the state it leaves (the summary of (Φ, v)
//        combined onto M, a) seeded with λ_M, λ_a, and Φ = φ(k) seeded
//        with Φ's cotangent from both;
//      - the window's rows are the ring entering the chunk (its first W−1
//        rows) and the chunk's own; the ring leaving it is rows [n, n+W−1)
//        of them, n the chunk's length. The rows' cotangent plus λ_r, λ_u
//        placed there gives the chunk's own anchors' gradients and, in the
//        first W−1 rows, the λ_r, λ_u entering it.
//      The initial state's gradient is the λ leaving the first chunk; Ω's
//      is summed over every chunk, head and batch entry.
//
// Padding rows past the sequence's end hold zeros, have no real anchor and
// a zero cotangent (their D, which may be 0, is read as 1 / D = 0).
//
//===----------------------------------------------------------------------===//

#include "ChunkBackward.h"

#include "hla/Conversion/HLAToLinalg.h"
#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;
using utils::IteratorType;

namespace {

class AnchorVjpLowering {
public:
  AnchorVjpLowering(AnchorVjpOp op, int64_t chunk, const ChunkPlan &plan,
                    bool bf16Products)
      : op(op), spec(op.getMonoid().getSpec()), chunk(chunk), plan(plan),
        bf16Products(bf16Products) {}

  LogicalResult lower();

private:
  Value constant(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, op.getLoc(), v);
  }
  /// Rows [start, start + rows) of (bi, hi) of a [B, T, H, width] operand,
  /// zero-padded to the chunk, f32.
  Value loadRows(OpBuilder &b, Value operand, Value bi, Value hi, Value start,
                 Value rows) {
    int64_t width = cast<RankedTensorType>(operand.getType()).getDimSize(3);
    return loadChunkRows(b, op.getLoc(), operand, {bi, start, hi, idx(b, 0)},
                         rows, chunk, width);
  }
  /// The [shape] slice at (bi, hi) of a [B, H, shape] tensor, f32.
  Value stateOf(OpBuilder &b, Value state, Value bi, Value hi) {
    auto type = cast<RankedTensorType>(state.getType());
    llvm::ArrayRef<int64_t> shape = type.getShape().drop_front(2);
    auto [offsets, sizes, strides] =
        pairSlice(b, bi, hi, shape,
                  llvm::SmallVector<OpFoldResult>(shape.size(), idx(b, 0)));
    return tensor::ExtractSliceOp::create(
        b, op.getLoc(), RankedTensorType::get(shape, type.getElementType()),
        state, offsets, sizes, strides);
  }
  /// A [B, H, N, component] stack per carried component and where the
  /// (bi, hi) part of one is.
  Value emptyStack(OpBuilder &b, unsigned j) {
    llvm::SmallVector<int64_t> shape = {batch, heads, numChunks};
    llvm::append_range(shape, componentShapes[carried[j]]);
    return tensor::EmptyOp::create(b, op.getLoc(), shape, b.getF32Type());
  }
  std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
             llvm::SmallVector<OpFoldResult>>
  stackPlace(OpBuilder &b, unsigned j, Value bi, Value hi,
             OpFoldResult chunkIndex, int64_t count) {
    llvm::SmallVector<int64_t> shape = {count};
    llvm::append_range(shape, componentShapes[carried[j]]);
    llvm::SmallVector<OpFoldResult> at = {chunkIndex};
    at.append(componentShapes[carried[j]].size(), idx(b, 0));
    return pairSlice(b, bi, hi, shape, at);
  }
  /// The ChunkTiles of chunk [start, start + count) of (bi, hi): Φ and v
  /// as the monoid's token inputs, the entry state as its carried one.
  ChunkTiles chunkTiles(Value bi, Value hi, Value start, Value count, Value phi,
                        Value v, llvm::ArrayRef<Value> entry);
  /// The chunk's key features from its key rows, at `b`.
  Value keyFeatures(OpBuilder &b, Value keys, Value count) {
    return emitKeyFeatures(b, op.getLoc(), keys, omega32, window.scale, count);
  }

  /// Pass 1: per carried component, the stack of the states entering the
  /// chunks.
  FailureOr<llvm::SmallVector<Value>> saveEntryStates(OpBuilder &b);
  /// Pass 2: the gradients, in the op's result order, with Ω's per
  /// (batch entry, head) [B, H, m, d] in its place.
  FailureOr<llvm::SmallVector<Value>> reversePass(OpBuilder &b,
                                                  ValueRange stacks);

  /// What one chunk's reverse gives.
  struct Step {
    /// Gradients of the chunk's rows of q, k, v, r, u (f32, [c, width]).
    Value dq, dk, dv, dr, du;
    /// λ entering the chunk: M, a, then the ring's r and u (none when
    /// W = 1).
    llvm::SmallVector<Value> lambda;
    /// Ω's gradient from this chunk.
    Value domega;
  };
  FailureOr<Step> emitStep(OpBuilder &b, Value bi, Value hi, Value start,
                           Value count, llvm::ArrayRef<Value> entry,
                           llvm::ArrayRef<Value> lambda);

  AnchorVjpOp op;
  const MonoidSpec &spec;
  int64_t chunk;
  const ChunkPlan &plan;
  /// The target rounds products' operands to bf16 (see emitStep).
  bool bf16Products;

  /// Where the target rounds products' operands to bf16, the matrix
  /// products in `ops` split into products of bf16-exact parts.
  void splitProducts(OpBuilder &b, llvm::ArrayRef<Operation *> ops) {
    if (bf16Products)
      splitMatrixProducts(b, ops, splitParts);
  }
  /// The operands split so far (Ω's f32 copy, read by both passes, once).
  Bf16Parts splitParts;
  AnchorWindow window;
  std::optional<DecayTiles> decay;
  const PlannedOutput *numPlan = nullptr, *denPlan = nullptr;
  unsigned phiInput = 0, vInput = 0, fInput = 0;
  llvm::SmallVector<unsigned> carried;
  llvm::SmallVector<llvm::SmallVector<int64_t>> componentShapes;
  Value omega32;
  int64_t batch = 0, length = 0, heads = 0, d = 0, dv = 0, features = 0;
  int64_t numChunks = 0;
};

/// `acc` + `x`, written into `acc` (a loop's carried tile updated in
/// place).
Value accumulateInto(TileBuilder &t, Value acc, Value x) {
  OpBuilder &b = t.getBuilder();
  int64_t rank = TileBuilder::shapeOf(acc).size();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  return t.generic(
      {x}, acc, {id, id},
      llvm::SmallVector<IteratorType>(rank, IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::AddFOp::create(nb, l, args[1], args[0]);
      });
}

/// Rows [first, first + count) of a [rows, cols] or [rows] tile.
Value rowsOf(OpBuilder &b, Location loc, Value tile, OpFoldResult first,
             int64_t count) {
  auto type = cast<RankedTensorType>(tile.getType());
  llvm::SmallVector<int64_t> shape(type.getShape());
  shape[0] = count;
  llvm::SmallVector<OpFoldResult> offsets = {first}, sizes = {idx(b, count)};
  if (type.getRank() == 2) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, type.getDimSize(1)));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), tile,
      offsets, sizes, strides);
}

/// `part` [rows, cols] (or [rows]) placed at row `first` of a zero tile of
/// `shape`.
Value placedAt(TileBuilder &t, Value part, OpFoldResult first,
               llvm::ArrayRef<int64_t> shape) {
  OpBuilder &b = t.getBuilder();
  auto type = cast<RankedTensorType>(part.getType());
  llvm::SmallVector<OpFoldResult> offsets = {first},
                                  sizes = {idx(b, type.getDimSize(0))};
  if (type.getRank() == 2) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, type.getDimSize(1)));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return tensor::InsertSliceOp::create(b, t.getLoc(), part, t.zeros(shape),
                                       offsets, sizes, strides);
}

ChunkTiles AnchorVjpLowering::chunkTiles(Value bi, Value hi, Value start,
                                         Value count, Value phi, Value v,
                                         llvm::ArrayRef<Value> entry) {
  ChunkTiles tiles;
  tiles.chunk = chunk;
  tiles.length = count;
  tiles.batch = bi;
  tiles.start = start;
  tiles.head = hi;
  tiles.tokens.assign(spec.inputs.size(), Value());
  tiles.tokens[phiInput] = phi;
  tiles.tokens[vInput] = v;
  tiles.carried.assign(spec.components.size(), Value());
  for (auto [j, c] : llvm::enumerate(carried))
    tiles.carried[c] = entry[j];
  return tiles;
}

FailureOr<llvm::SmallVector<Value>>
AnchorVjpLowering::saveEntryStates(OpBuilder &b) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  llvm::SmallVector<Value> inits;
  for (unsigned j = 0; j < carried.size(); ++j)
    inits.push_back(emptyStack(b, j));
  auto pass = scf::ForallOp::create(
      b, loc, llvm::ArrayRef<OpFoldResult>{idx(b, batch), idx(b, heads)}, inits,
      std::nullopt);
  b.setInsertionPointToStart(pass.getBody());
  Value bi = pass.getBody()->getArgument(0),
        hi = pass.getBody()->getArgument(1);
  TileBuilder tb(b, loc);
  llvm::SmallVector<Value> loopInits;
  for (auto [j, c] : llvm::enumerate(carried))
    loopInits.push_back(op.getInit().empty()
                            ? tb.zeros(componentShapes[c])
                            : stateOf(b, op.getInit()[j], bi, hi));
  for (unsigned j = 0; j < carried.size(); ++j) {
    auto [offsets, sizes, strides] =
        stackPlace(b, j, bi, hi, idx(b, 0), numChunks);
    llvm::SmallVector<int64_t> shape = {numChunks};
    llvm::append_range(shape, componentShapes[carried[j]]);
    loopInits.push_back(tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, b.getF32Type()),
        pass.getRegionIterArgs()[j], offsets, sizes, strides));
  }
  size_t k = carried.size();
  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, numChunks), constant(b, 1), loopInits,
      [&](OpBuilder &nb, Location l, Value c, ValueRange iter) {
        TileBuilder t(nb, l);
        llvm::SmallVector<Value> yields(iter.size());
        // The state entering chunk c, saved before it is written over.
        for (unsigned j = 0; j < k; ++j) {
          llvm::SmallVector<OpFoldResult> at = {c};
          at.append(componentShapes[carried[j]].size(), idx(nb, 0));
          llvm::SmallVector<OpFoldResult> sizes = {idx(nb, 1)};
          for (int64_t s : componentShapes[carried[j]])
            sizes.push_back(idx(nb, s));
          llvm::SmallVector<OpFoldResult> strides(at.size(), idx(nb, 1));
          yields[k + j] = tensor::InsertSliceOp::create(
              nb, l, iter[j], iter[k + j], at, sizes, strides);
        }
        auto [start, count] = chunkSpan(nb, l, c, chunk, length);
        Value phi = keyFeatures(
            nb, loadRows(nb, op.getKey(), bi, hi, start, count), count);
        Value v = loadRows(nb, op.getValue(), bi, hi, start, count);
        ChunkTiles tiles = chunkTiles(bi, hi, start, count, phi, v,
                                      llvm::to_vector(iter.take_front(k)));
        FailureOr<llvm::SmallVector<Value>> summary = emitChunkSummaries(
            nb, l, spec, plan, tiles, *decay, op, componentShapes);
        if (failed(summary)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        llvm::SmallVector<Type> fullTypes;
        for (auto &shape : componentShapes)
          fullTypes.push_back(RankedTensorType::get(shape, nb.getF32Type()));
        llvm::SmallVector<Value> next = combineCarried(
            nb, l, op.getMonoid(), iter.take_front(k), *summary, fullTypes);
        // Written over the carried state after its last read: one buffer
        // for the loop.
        for (unsigned j = 0; j < k; ++j)
          yields[j] = linalg::CopyOp::create(nb, l, next[carried[j]], iter[j])
                          .getResult(0);
        scf::YieldOp::create(nb, l, yields);
      });
  if (failed(status))
    return failure();
  // The saved states' errors reach the features' cotangents as the
  // products' own do (see emitStep).
  splitProducts(b, {loop});
  b.setInsertionPointToStart(pass.getTerminator().getBody());
  for (unsigned j = 0; j < k; ++j) {
    auto [offsets, sizes, strides] =
        stackPlace(b, j, bi, hi, idx(b, 0), numChunks);
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(k + j),
                                          pass.getRegionIterArgs()[j], offsets,
                                          sizes, strides);
  }
  return llvm::SmallVector<Value>(pass.getResults());
}

FailureOr<AnchorVjpLowering::Step>
AnchorVjpLowering::emitStep(OpBuilder &b, Value bi, Value hi, Value start,
                            Value count, llvm::ArrayRef<Value> entry,
                            llvm::ArrayRef<Value> lambda) {
  Location loc = op.getLoc();
  TileBuilder tb(b, loc);
  Type f32 = b.getF32Type();
  int64_t halo = window.window - 1, windowRows = chunk + halo;
  Value end = arith::AddIOp::create(b, loc, start, count);
  Value zeroIndex = constant(b, 0);
  Value q = loadRows(b, op.getQuery(), bi, hi, start, count);
  Value keys = loadRows(b, op.getKey(), bi, hi, start, count);
  Value v = loadRows(b, op.getValue(), bi, hi, start, count);
  Value cotangent = loadRows(b, op.getCotangent(), bi, hi, start, count);
  // The window's rows: the ring entering the chunk, then its own tokens.
  Value anchorOperands[] = {op.getAnchorKey(), op.getAnchorValue(), Value()};
  Value windowTiles[3];
  for (unsigned i = 0; i < 3; ++i)
    windowTiles[i] = window.loadRows(
        b, loc, anchorOperands[i],
        op.getInit().empty() ? Value() : op.getInit()[carried.size() + i], bi,
        hi, start, end, windowRows, bi, zeroIndex);

  // Φ = φ(k), recorded for the reverse of the state's part.
  OpRecorder keySide(b);
  Value phi = keyFeatures(b, keys, count);
  llvm::SmallVector<Operation *> keyProgram = keySide.recorded();
  ChunkTiles tiles = chunkTiles(bi, hi, start, count, phi, v, entry);

  // Offset w's anchors (anchor i − w of query i is window row i + W−1 − w).
  auto offsetRows = [&](OpBuilder &nb, Location l, Value tile, Value w) {
    Value first = arith::SubIOp::create(
        nb, l, arith::ConstantIndexOp::create(nb, l, halo), w);
    return rowsOf(nb, l, tile, first, chunk);
  };
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows2 =
      AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
  const float lowest = -3.0e38f;

  // Each query's shift: the largest exponent over its real anchors.
  Value shift =
      linalg::FillOp::create(b, loc, tb.scalar(lowest), tb.empty({chunk}))
          .getResult(0);
  auto shiftLoop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, window.window), constant(b, 1),
      ValueRange{shift},
      [&](OpBuilder &nb, Location l, Value w, ValueRange iter) {
        TileBuilder t(nb, l);
        AnchorWindow::Projection p =
            window.project(t, window.scaleQueries(t, q),
                           offsetRows(nb, l, windowTiles[0], w), omega32);
        Value rowMax = t.generic(
            {p.projected},
            linalg::FillOp::create(nb, l, t.scalar(lowest), t.empty({chunk}))
                .getResult(0),
            {id2, rows2}, {IteratorType::parallel, IteratorType::reduction},
            [](OpBuilder &eb, Location el, ValueRange args) -> Value {
              return arith::MaximumFOp::create(eb, el, args[0], args[1]);
            });
        Value next = t.generic(
            {rowMax, p.halfNorm, offsetRows(nb, l, windowTiles[2], w)}, iter[0],
            {id1, id1, id1, id1}, {IteratorType::parallel},
            [](OpBuilder &eb, Location el, ValueRange args) -> Value {
              Value zero =
                  arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(0));
              Value real = arith::CmpFOp::create(
                  eb, el, arith::CmpFPredicate::OGT, args[2], zero);
              Value top = arith::SubFOp::create(eb, el, args[0], args[1]);
              return arith::SelectOp::create(
                  eb, el, real, arith::MaximumFOp::create(eb, el, args[3], top),
                  args[3]);
            });
        scf::YieldOp::create(nb, l, ValueRange{next});
      });
  shift = shiftLoop.getResult(0);
  // What follows the shift: N, D and o, the offsets' programs in reverse,
  // the state's part.
  OpRecorder afterShift(b);

  // One offset's program under the fixed shift: (u ⊙ num, den).
  bool failedEmission = false;
  auto offsetTerms = [&](TileBuilder &t, Value w) -> std::pair<Value, Value> {
    OpBuilder &nb = t.getBuilder();
    Location l = t.getLoc();
    AnchorWindow::Projection p =
        window.project(t, window.scaleQueries(t, q),
                       offsetRows(nb, l, windowTiles[0], w), omega32);
    Value f =
        window.features(t, p, shift, offsetRows(nb, l, windowTiles[2], w));
    ChunkTiles anchorTiles = tiles;
    anchorTiles.tokens[fInput] = f;
    FailureOr<Value> num = emitTermSum(t, spec, anchorTiles, *decay, op,
                                       numPlan->terms, false, {chunk, dv});
    FailureOr<Value> den = failure();
    if (succeeded(num))
      den = emitTermSum(t, spec, anchorTiles, *decay, op, denPlan->terms, false,
                        {chunk});
    if (failed(den)) {
      failedEmission = true;
      return {};
    }
    return {t.mul(offsetRows(nb, l, windowTiles[1], w), *num), *den};
  };

  // The window's sums N, D under the shift.
  auto sumLoop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, window.window), constant(b, 1),
      ValueRange{tb.zeros({chunk, dv}), tb.zeros({chunk})},
      [&](OpBuilder &nb, Location l, Value w, ValueRange iter) {
        TileBuilder t(nb, l);
        auto [weighted, den] = offsetTerms(t, w);
        if (failedEmission) {
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        scf::YieldOp::create(nb, l,
                             ValueRange{accumulateInto(t, iter[0], weighted),
                                        accumulateInto(t, iter[1], den)});
      });
  if (failedEmission)
    return failure();
  // 1 / D (0 where no anchor is real: padding rows), o = N / D, and the
  // sums' cotangents ḡ / D and −(ḡ · o) / D.
  Value inverse = tb.generic(
      {sumLoop.getResult(1)}, tb.empty({chunk}), {id1, id1},
      {IteratorType::parallel},
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
        Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1));
        Value positive = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                               args[0], zero);
        return arith::SelectOp::create(
            nb, l, positive, arith::DivFOp::create(nb, l, one, args[0]), zero);
      });
  Value out = tb.scaleRows(sumLoop.getResult(0), inverse);
  Value numCotangent = tb.scaleRows(cotangent, inverse);
  Value denCotangent =
      tb.generic({tb.dotRows(cotangent, out), inverse}, tb.empty({chunk}),
                 {id1, id1, id1}, {IteratorType::parallel},
                 [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::NegFOp::create(
                       nb, l, arith::MulFOp::create(nb, l, args[0], args[1]));
                 });

  // Each offset's program in reverse, the gradients summed over offsets.
  llvm::SmallVector<Value> wrt = {q, windowTiles[0], windowTiles[1], phi,
                                  v, entry[0],       entry[1],       omega32};
  llvm::SmallVector<Value> accInits;
  for (Value x : wrt)
    accInits.push_back(tb.zeros(TileBuilder::shapeOf(x)));
  bool failedReverse = false;
  auto reverseLoop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, window.window), constant(b, 1),
      accInits, [&](OpBuilder &nb, Location l, Value w, ValueRange iter) {
        TileBuilder t(nb, l);
        OpRecorder recorder(nb);
        auto [weighted, den] = offsetTerms(t, w);
        FailureOr<llvm::SmallVector<Value>> grads = failure();
        if (!failedEmission)
          grads = emitReverseDiff(
              nb, l, recorder.recorded(),
              {{weighted, numCotangent}, {den, denCotangent}}, wrt);
        if (failed(grads)) {
          failedReverse = true;
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        llvm::SmallVector<Value> sums;
        for (auto [acc, grad] : llvm::zip(iter, *grads))
          sums.push_back(accumulateInto(t, acc, grad));
        scf::YieldOp::create(nb, l, sums);
      });
  if (failedEmission || failedReverse)
    return failure();
  ValueRange fromWindow = reverseLoop.getResults();

  // The state it leaves, in reverse from λ_M, λ_a; Φ's cotangent from the
  // window too, back through φ to k.
  OpRecorder stateSide(b);
  FailureOr<llvm::SmallVector<Value>> summary = emitChunkSummaries(
      b, loc, spec, plan, tiles, *decay, op, componentShapes);
  if (failed(summary))
    return failure();
  llvm::SmallVector<Type> fullTypes;
  for (auto &shape : componentShapes)
    fullTypes.push_back(RankedTensorType::get(shape, f32));
  llvm::SmallVector<Value> leaving =
      combineCarried(b, loc, op.getMonoid(), entry, *summary, fullTypes);
  auto combine = leaving.front().getDefiningOp<CombineOp>();
  llvm::SmallVector<Value> lowered;
  {
    // Users that keep the carried results alive through the lowering.
    llvm::SmallVector<Value> kept;
    for (unsigned c : carried)
      kept.push_back(leaving[c]);
    auto users = UnrealizedConversionCastOp::create(
        b, loc, TypeRange(ValueRange(kept)), kept);
    lowered = lowerCombineToLinalg(combine);
    users.erase();
  }
  llvm::SmallVector<Operation *> program = keyProgram;
  llvm::append_range(program, stateSide.recorded());
  llvm::SmallVector<std::pair<Value, Value>> seeds = {{phi, fromWindow[3]}};
  for (auto [j, c] : llvm::enumerate(carried))
    seeds.push_back({lowered[c], lambda[j]});
  FailureOr<llvm::SmallVector<Value>> fromState = emitReverseDiff(
      b, loc, program, seeds, {keys, v, entry[0], entry[1], omega32});
  if (failed(fromState))
    return failure();

  // The features' cotangents are differences of nearly equal sums (ḡ·u⊙v
  // against ḡ·o over keys whose features are close: their leading terms
  // cancel), o among them: with operands rounded to bf16 (tensor cores),
  // dk and dΩ at 2x512x4, m = 128, W = 64 were 1.03e-2 and 1.05e-2 off
  // the CPU's, 7.0e-3 and 6.9e-3 split (H100, 2026-12-07). Where the
  // target rounds them, every product after the shift is split into
  // bf16-exact parts. (The shift may be any bound: it cancels.)
  splitProducts(b, afterShift.recorded());

  Step step;
  step.dq = fromWindow[0];
  step.dk = (*fromState)[0];
  step.dv = tb.add(fromWindow[4], (*fromState)[1]);
  step.lambda = {tb.add(fromWindow[5], (*fromState)[2]),
                 tb.add(fromWindow[6], (*fromState)[3])};
  step.domega = tb.add(fromWindow[7], (*fromState)[4]);
  // Anchors: the ring leaving the chunk is rows [n, n + W−1) of the window.
  Value windowGrads[2] = {fromWindow[1], fromWindow[2]};
  for (unsigned i = 0; i < 2; ++i) {
    Value total = windowGrads[i];
    if (halo > 0) {
      total = tb.add(total, placedAt(tb, lambda[carried.size() + i], count,
                                     TileBuilder::shapeOf(total)));
      step.lambda.push_back(rowsOf(b, loc, total, idx(b, 0), halo));
    }
    (i ? step.du : step.dr) = rowsOf(b, loc, total, idx(b, halo), chunk);
  }
  return step;
}

FailureOr<llvm::SmallVector<Value>>
AnchorVjpLowering::reversePass(OpBuilder &b, ValueRange stacks) {
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  // Shared outputs: the token operands' gradients, Ω's per (batch entry,
  // head), then the initial state's.
  Value tokenOperands[] = {op.getQuery(), op.getKey(), op.getValue(),
                           op.getAnchorKey(), op.getAnchorValue()};
  llvm::SmallVector<Value> inits;
  for (Value x : tokenOperands) {
    auto type = cast<RankedTensorType>(x.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  inits.push_back(tensor::EmptyOp::create(
      b, loc, llvm::ArrayRef<int64_t>{batch, heads, features, d}, f32));
  for (Value x : op.getInit()) {
    auto type = cast<RankedTensorType>(x.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  OpBuilder::InsertionGuard guard(b);
  auto pass = scf::ForallOp::create(
      b, loc, llvm::ArrayRef<OpFoldResult>{idx(b, batch), idx(b, heads)}, inits,
      std::nullopt);
  Block *body = pass.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  ValueRange shared = pass.getRegionIterArgs();
  TileBuilder tb(b, loc);
  int64_t halo = window.window - 1;

  // Carried: λ (M, a, and the ring's r, u when W > 1), Ω's gradient, then
  // the (bi, hi) rows of each token operand's gradient.
  llvm::SmallVector<Value> loopInits;
  llvm::SmallVector<llvm::SmallVector<int64_t>> lambdaShapes = {
      componentShapes[carried[0]], componentShapes[carried[1]]};
  if (halo > 0)
    lambdaShapes.append({{halo, d}, {halo, dv}});
  for (auto [j, shape] : llvm::enumerate(lambdaShapes))
    loopInits.push_back(op.getFinalCotangent().empty()
                            ? tb.zeros(shape)
                            : stateOf(b, op.getFinalCotangent()[j], bi, hi));
  size_t numLambda = lambdaShapes.size();
  loopInits.push_back(tb.zeros({features, d}));
  auto rowsPlace = [&](OpBuilder &nb, RankedTensorType type, OpFoldResult first,
                       OpFoldResult rows) {
    llvm::SmallVector<OpFoldResult> offsets = {bi, first, hi, idx(nb, 0)},
                                    sizes = {idx(nb, 1), rows, idx(nb, 1),
                                             idx(nb, type.getDimSize(3))};
    llvm::SmallVector<OpFoldResult> strides(4, idx(nb, 1));
    return std::make_tuple(offsets, sizes, strides);
  };
  for (unsigned i = 0; i < 5; ++i) {
    auto type = cast<RankedTensorType>(shared[i].getType());
    auto [offsets, sizes, strides] =
        rowsPlace(b, type, idx(b, 0), idx(b, length));
    loopInits.push_back(tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get({length, type.getDimSize(3)},
                              type.getElementType()),
        shared[i], offsets, sizes, strides));
  }

  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, numChunks), constant(b, 1), loopInits,
      [&](OpBuilder &nb, Location l, Value j, ValueRange iter) {
        // From the last chunk to the first.
        Value c = arith::SubIOp::create(nb, l, constant(nb, numChunks - 1), j);
        auto [start, count] = chunkSpan(nb, l, c, chunk, length);
        llvm::SmallVector<Value> entry;
        for (unsigned k = 0; k < carried.size(); ++k) {
          llvm::ArrayRef<int64_t> shape = componentShapes[carried[k]];
          auto [offsets, sizes, strides] = stackPlace(nb, k, bi, hi, c, 1);
          Value slice = tensor::ExtractSliceOp::create(
              nb, l, RankedTensorType::get(shape, nb.getF32Type()), stacks[k],
              offsets, sizes, strides);
          entry.push_back(slice);
        }
        FailureOr<Step> step =
            emitStep(nb, bi, hi, start, count, entry,
                     llvm::to_vector(iter.take_front(numLambda)));
        if (failed(step)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        TileBuilder t(nb, l);
        llvm::SmallVector<Value> yields;
        for (unsigned k = 0; k < numLambda; ++k)
          yields.push_back(
              linalg::CopyOp::create(nb, l, step->lambda[k], iter[k])
                  .getResult(0));
        yields.push_back(accumulateInto(t, iter[numLambda], step->domega));
        Value grads[] = {step->dq, step->dk, step->dv, step->dr, step->du};
        for (unsigned i = 0; i < 5; ++i) {
          Value rows = iter[numLambda + 1 + i];
          auto rowType = cast<RankedTensorType>(rows.getType());
          Value grad = t.castTo(grads[i], rowType.getElementType());
          int64_t width = rowType.getDimSize(1);
          Value valid = tensor::ExtractSliceOp::create(
              nb, l,
              RankedTensorType::get({ShapedType::kDynamic, width},
                                    rowType.getElementType()),
              grad, llvm::ArrayRef<OpFoldResult>{idx(nb, 0), idx(nb, 0)},
              llvm::ArrayRef<OpFoldResult>{count, idx(nb, width)},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)});
          yields.push_back(tensor::InsertSliceOp::create(
              nb, l, valid, rows,
              llvm::ArrayRef<OpFoldResult>{start, idx(nb, 0)},
              llvm::ArrayRef<OpFoldResult>{count, idx(nb, width)},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)}));
        }
        scf::YieldOp::create(nb, l, yields);
      });
  if (failed(status))
    return failure();

  b.setInsertionPointToStart(pass.getTerminator().getBody());
  for (unsigned i = 0; i < 5; ++i) {
    auto type = cast<RankedTensorType>(shared[i].getType());
    auto [offsets, sizes, strides] =
        rowsPlace(b, type, idx(b, 0), idx(b, length));
    tensor::ParallelInsertSliceOp::create(b, loc,
                                          loop.getResult(numLambda + 1 + i),
                                          shared[i], offsets, sizes, strides);
  }
  {
    auto [offsets, sizes, strides] =
        pairSlice(b, bi, hi, {features, d}, {idx(b, 0), idx(b, 0)});
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(numLambda),
                                          shared[5], offsets, sizes, strides);
  }
  if (!op.getInit().empty()) {
    // The λ leaving the first chunk; the validity's gradient is zero.
    b.setInsertionPoint(pass.getTerminator());
    llvm::SmallVector<Value> grads(loop.getResults().take_front(numLambda));
    for (unsigned i = grads.size(); i < op.getInit().size(); ++i)
      grads.push_back(tb.zeros(cast<RankedTensorType>(op.getInit()[i].getType())
                                   .getShape()
                                   .drop_front(2)));
    b.setInsertionPointToEnd(pass.getTerminator().getBody());
    for (auto [i, grad] : llvm::enumerate(grads)) {
      auto type = cast<RankedTensorType>(shared[6 + i].getType());
      llvm::ArrayRef<int64_t> shape = type.getShape().drop_front(2);
      auto [offsets, sizes, strides] =
          pairSlice(b, bi, hi, shape,
                    llvm::SmallVector<OpFoldResult>(shape.size(), idx(b, 0)));
      tensor::ParallelInsertSliceOp::create(b, loc, grad, shared[6 + i],
                                            offsets, sizes, strides);
    }
  }
  return llvm::SmallVector<Value>(pass.getResults());
}

LogicalResult AnchorVjpLowering::lower() {
  for (Value v : op->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return chunkError(op) << "the chunked backward needs static shapes";
  RankedTensorType q = op.getQuery().getType(), v = op.getValue().getType();
  batch = q.getDimSize(0);
  length = q.getDimSize(1);
  heads = q.getDimSize(2);
  d = q.getDimSize(3);
  dv = v.getDimSize(3);
  features = op.getOmega().getType().getDimSize(0);
  numChunks = (length + chunk - 1) / chunk;
  window.window = op.getWindow();
  window.scale = op.getScale().convertToDouble();
  window.heads = heads;
  phiInput = *spec.findInput("phi");
  vInput = *spec.findInput("v");
  fInput = *spec.findInput("f");
  for (const PlannedOutput &out : plan.readouts)
    (out.name == "num" ? numPlan : denPlan) = &out;
  carried = spec.getCarryComponents();
  if (!numPlan || !denPlan || carried.size() != 2 ||
      spec.components.size() != 2)
    return chunkError(op) << "LinSimp's monoid must carry M and a and read "
                             "out num and den";
  MonoidDimBinder binder;
  std::string error;
  (void)binder.bind({"", {"m"}, false}, {features}, error);
  (void)binder.bind({"", {"dv"}, false}, {dv}, error);
  for (const MonoidSlot &slot : spec.components)
    componentShapes.push_back(binder.resolve(slot));

  OpBuilder b(op);
  Location loc = op.getLoc();
  omega32 = TileBuilder(b, loc).castTo(op.getOmega(), b.getF32Type());
  // Constant tiles (the readouts' causal masks) go ahead of both passes:
  // before a marker made before them.
  Operation *marker = arith::ConstantIndexOp::create(b, loc, 0);
  OpBuilder hoist(marker);
  decay.emplace(hoist, loc, chunk, plan.gamma);
  FailureOr<llvm::SmallVector<Value>> stacks = saveEntryStates(b);
  if (failed(stacks))
    return failure();
  FailureOr<llvm::SmallVector<Value>> results = reversePass(b, *stacks);
  if (failed(results))
    return failure();
  // Ω's gradient: the sum over batch entries and heads.
  MLIRContext *ctx = b.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
  TileBuilder tb(b, loc);
  Value domega =
      tb.generic({(*results)[5]}, tb.zeros({features, d}),
                 {AffineMap::get(4, 0, {d0, d1, d2, d3}, ctx),
                  AffineMap::get(4, 0, {d2, d3}, ctx)},
                 {IteratorType::reduction, IteratorType::reduction,
                  IteratorType::parallel, IteratorType::parallel},
                 [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::AddFOp::create(nb, l, args[1], args[0]);
                 });
  (*results)[5] = tb.castTo(domega, op.getOmega().getType().getElementType());
  if (auto module = op->getParentOfType<ModuleOp>())
    recordChunking(module, spec.name +
                               " backward: two passes, each chunk's anchor "
                               "offsets differentiated in reverse");
  op->replaceAllUsesWith(*results);
  op->erase();
  marker->erase();
  return success();
}

} // namespace

LogicalResult mlir::hla::chunk::lowerAnchorVjp(AnchorVjpOp op, int64_t chunk,
                                               bool bf16Products) {
  std::string error;
  FailureOr<ChunkPlan> plan = buildChunkPlan(op.getMonoid().getSpec(), error);
  if (failed(plan))
    return chunkError(op) << error;
  // Only 16-bit ops' products run with bf16 operands.
  bool rounded =
      bf16Products &&
      op.getQuery().getType().getElementType().getIntOrFloatBitWidth() == 16;
  return AnchorVjpLowering(op, chunk, *plan, rounded).lower();
}
