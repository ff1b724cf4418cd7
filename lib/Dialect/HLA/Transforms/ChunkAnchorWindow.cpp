//===- ChunkAnchorWindow.cpp - LinSimp's anchor window ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// LinSimp reads its state out once per anchor of a query's window: the
// anchors' random features, the monoid's num/den readouts with them as
// input, weighted by the anchor values, then num / den.
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <array>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;
using utils::IteratorType;

namespace mlir::hla::chunk {

Value emitKeyFeatures(OpBuilder &b, Location loc, Value x, Value omega,
                      double scale, Value length) {
  TileBuilder tb(b, loc);
  auto omegaType = cast<RankedTensorType>(omega.getType());
  int64_t features = omegaType.getDimSize(0);
  int64_t chunk = TileBuilder::shapeOf(x)[0];
  double root = std::sqrt(scale);
  Value projected = tb.matmul(x, omega, false, /*transB=*/true);
  Value halfNorm = tb.scale(tb.dotRows(x, x), 0.5 * scale);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows =
      AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
  double norm = 1.0 / std::sqrt(double(features));
  return tb.generic(
      {projected, halfNorm}, tb.empty({chunk, features}), {id2, rows, id2},
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        auto c = [&](double v) -> Value {
          return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
        };
        Value e = arith::SubFOp::create(
            nb, l, arith::MulFOp::create(nb, l, args[0], c(root)), args[1]);
        Value phi = arith::MulFOp::create(nb, l, math::ExpOp::create(nb, l, e),
                                          c(norm));
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value real = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                           row, length);
        return arith::SelectOp::create(nb, l, real, phi, c(0.0));
      });
}

Value AnchorWindow::loadRows(OpBuilder &b, Location loc, Value operand,
                             Value init, Value batch, Value head, Value start,
                             Value end, int64_t rows, Value sequence,
                             Value sequenceStart) const {
  int64_t before = window - 1;
  Type f32 = b.getF32Type();
  TileBuilder tb(b, loc);
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // Tokens [start − nb, end) are real (nb: how many of the W − 1 before
  // `start` are in the sequence), at rows [before − nb, ...); the
  // before − nb rows ahead of them are anchors [nb, before) of `init`.
  Value nb = arith::MinSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, start, sequenceStart), cst(before));
  Value realLo = arith::SubIOp::create(b, loc, start, nb);
  Value count = arith::SubIOp::create(b, loc, end, realLo);
  Value offset = arith::SubIOp::create(b, loc, cst(before), nb);
  Value initCount = offset;
  Type element = f32;
  int64_t width = 0;
  bool isVector = false;
  if (operand) {
    auto type = cast<RankedTensorType>(operand.getType());
    element = type.getElementType();
    width = type.getDimSize(3);
    isVector = true;
  } else if (init) {
    isVector = false;
  }
  llvm::SmallVector<int64_t> tileShape = {rows};
  if (isVector)
    tileShape.push_back(width);
  auto zerosOf = [&](Type type) -> Value {
    Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0));
    return linalg::FillOp::create(
               b, loc, zero,
               Value(tensor::EmptyOp::create(b, loc, tileShape, type)))
        .getResult(0);
  };
  llvm::SmallVector<OpFoldResult> rowSizes = {count};
  if (isVector)
    rowSizes.push_back(idx(b, width));
  llvm::SmallVector<OpFoldResult> rowOffsets = {offset};
  if (isVector)
    rowOffsets.push_back(idx(b, 0));
  llvm::SmallVector<OpFoldResult> ones(tileShape.size(), idx(b, 1));
  Value tile;
  if (operand) {
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t groups = heads / type.getDimSize(2);
    Value kvHead = head;
    if (groups != 1)
      kvHead = arith::DivUIOp::create(b, loc, head, cst(groups));
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic, width}, element),
        operand, llvm::ArrayRef<OpFoldResult>{batch, realLo, kvHead, idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), count, idx(b, 1),
                                     idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                     idx(b, 1)});
    tile = tensor::InsertSliceOp::create(b, loc, slice, zerosOf(element),
                                         rowOffsets, rowSizes, ones);
    tile = tb.castTo(tile, f32);
  } else {
    // Validity: 1 for the real tokens, rows [offset, offset + count) (a
    // static tile: GPU buffers have static shapes).
    Value last = arith::AddIOp::create(b, loc, offset, count);
    tile = tb.generic(
        {}, tb.empty({rows}), {b.getMultiDimIdentityMap(1)},
        {IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange) -> Value {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value after = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge,
                                              row, offset);
          Value before = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                               row, last);
          Value real = arith::AndIOp::create(nb, l, after, before);
          return arith::SelectOp::create(
              nb, l, real,
              arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0)),
              arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0)));
        });
  }
  if (init) {
    // Initial anchors [N, H_q, W−1, ...] (f32), rows [nb, before).
    llvm::SmallVector<OpFoldResult> offsets = {sequence, head, nb};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1), initCount};
    llvm::SmallVector<int64_t> sliceShape = {ShapedType::kDynamic};
    if (isVector) {
      offsets.push_back(idx(b, 0));
      sizes.push_back(idx(b, width));
      sliceShape.push_back(width);
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(sliceShape, f32), init, offsets, sizes,
        strides);
    llvm::SmallVector<OpFoldResult> at(tileShape.size(), idx(b, 0));
    llvm::SmallVector<OpFoldResult> initSizes = {initCount};
    if (isVector)
      initSizes.push_back(idx(b, width));
    tile =
        tensor::InsertSliceOp::create(b, loc, slice, tile, at, initSizes, ones);
  }
  return tile;
}

llvm::SmallVector<Value> ChunkRewriter::emitFinalAnchors(OpBuilder &b,
                                                         Location loc) {
  AnchorReadoutOp op = info.anchor;
  int64_t before = op.getWindow() - 1;
  llvm::SmallVector<Value> inits;
  for (Value result : op.getFinalAnchors()) {
    auto type = cast<RankedTensorType>(result.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  if (before == 0)
    return inits;
  ValueRange initial = op.getAnchors();
  auto loop = scf::ForallOp::create(
      b, loc, {idx(b, sequences), idx(b, info.heads)}, inits, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value si = body->getArgument(0), hi = body->getArgument(1);
  // The window ending at the sequence's end (packed: [cu[s], cu[s+1])).
  Value batch = si, begin = arith::ConstantIndexOp::create(b, loc, 0);
  Value end = arith::ConstantIndexOp::create(b, loc, info.length);
  if (cuSeqlens) {
    auto at = [&](Value i) -> Value {
      Value v = tensor::ExtractOp::create(b, loc, cuSeqlens, ValueRange{i});
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    batch = begin;
    begin = at(si);
    end = at(arith::AddIOp::create(b, loc, si,
                                   arith::ConstantIndexOp::create(b, loc, 1)));
  }
  Value operands[] = {op.getAnchorKey(), op.getAnchorValue(), Value()};
  llvm::SmallVector<Value> tiles;
  for (unsigned i = 0; i < 3; ++i)
    tiles.push_back(anchorWindow().loadRows(
        b, loc, operands[i], initial.empty() ? Value() : initial[i], batch, hi,
        end, end, before, si, begin));
  b.setInsertionPointToStart(loop.getTerminator().getBody());
  for (unsigned i = 0; i < 3; ++i) {
    auto type = cast<RankedTensorType>(tiles[i].getType());
    llvm::SmallVector<OpFoldResult> offsets = {si, hi};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1)};
    for (int64_t s : type.getShape()) {
      offsets.push_back(idx(b, 0));
      sizes.push_back(idx(b, s));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    tensor::ParallelInsertSliceOp::create(
        b, loc, tiles[i], body->getArgument(2 + i), offsets, sizes, strides);
  }
  return llvm::SmallVector<Value>(loop.getResults());
}

AnchorWindow ChunkRewriter::anchorWindow() const {
  AnchorReadoutOp op = info.anchor;
  AnchorWindow window;
  window.window = op.getWindow();
  window.scale = op.getScale().convertToDouble();
  window.heads = info.heads;
  return window;
}

Value AnchorWindow::scaleQueries(TileBuilder &t, Value queries) const {
  return t.scale(queries, std::sqrt(scale));
}

AnchorWindow::Projection AnchorWindow::project(TileBuilder &t,
                                               Value scaledQueries,
                                               Value anchors,
                                               Value omega) const {
  Value x = t.mul(scaledQueries, anchors);
  // (The exponent is never stored: ‖x‖²/2 is one number per row, so its row
  // maximum is the projections' maximum minus it.)
  return {t.scale(t.dotRows(x, x), 0.5),
          t.matmul(x, omega, false, /*transB=*/true)};
}

Value AnchorWindow::features(TileBuilder &t, const Projection &p, Value shift,
                             Value valid) const {
  OpBuilder &b = t.getBuilder();
  llvm::SmallVector<int64_t> shape(TileBuilder::shapeOf(p.projected));
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows2 =
      AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
  // m^-½ exp(z − ‖x‖²/2 − μ) = 2^(z log₂e + β) with one β per row:
  // β = log₂(m^-½) − (‖x‖²/2 + μ) log₂e, or −∞ for a padding anchor (whose
  // projections are finite: its rows are zeros), so that each feature is
  // one multiply-add and one exp2.
  constexpr double log2e = 1.4426950408889634;
  double logNorm = -0.5 * std::log2(double(shape[1]));
  llvm::SmallVector<Value> rowInputs = {p.halfNorm, valid};
  if (shift)
    rowInputs.push_back(shift);
  llvm::SmallVector<AffineMap> rowMaps(rowInputs.size() + 1, id1);
  Value bias = t.generic(
      rowInputs, t.empty({shape[0]}), rowMaps, {utils::IteratorType::parallel},
      [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
        auto c = [&](double v) -> Value {
          return arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(v));
        };
        Value down = args[0];
        if (shift)
          down = arith::AddFOp::create(eb, el, down, args[2]);
        Value beta = math::FmaOp::create(eb, el, down, c(-log2e), c(logNorm));
        Value real = arith::CmpFOp::create(eb, el, arith::CmpFPredicate::OGT,
                                           args[1], c(0));
        return arith::SelectOp::create(
            eb, el, real, beta, c(-std::numeric_limits<double>::infinity()));
      });
  return t.generic(
      {p.projected, bias}, t.empty(shape), {id2, rows2, id2},
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
        Value log2eF =
            arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(log2e));
        return math::Exp2Op::create(
            eb, el, math::FmaOp::create(eb, el, args[0], log2eF, args[1]));
      });
}

Value ChunkRewriter::omegaF32(Value omega) {
  Value &copy = omegaCopies[omega];
  if (!copy) {
    OpBuilder b(omega.getContext());
    b.setInsertionPointAfterValue(omega);
    copy = TileBuilder(b, omega.getLoc()).castTo(omega, b.getF32Type());
  }
  return copy;
}

/// Anchor offsets per pass: the most that divide the window and keep
/// `offsets · chunk` within `rows` (at least one).
static int64_t offsetsPerPass(int64_t window, int64_t chunk, int64_t rows) {
  int64_t best = 1;
  for (int64_t g = 2; g <= window; ++g)
    if (window % g == 0 && g * chunk <= rows)
      best = g;
  return best;
}

/// Offsets, sizes and strides of rows [first, first + count) of a [rows]
/// or [rows, cols] tile of type `type`.
static std::array<llvm::SmallVector<OpFoldResult>, 3>
rowRange(OpBuilder &b, RankedTensorType type, OpFoldResult first,
         int64_t count) {
  llvm::SmallVector<OpFoldResult> offsets = {first};
  llvm::SmallVector<OpFoldResult> sizes = {idx(b, count)};
  if (type.getRank() == 2) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, type.getDimSize(1)));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return {offsets, sizes, strides};
}

/// Rows [first, first + count) of a [rows] or [rows, cols] tile.
static Value rowSlice(OpBuilder &b, Location loc, Value tile,
                      OpFoldResult first, int64_t count) {
  auto type = cast<RankedTensorType>(tile.getType());
  llvm::SmallVector<int64_t> shape(type.getShape());
  shape[0] = count;
  auto [offsets, sizes, strides] = rowRange(b, type, first, count);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), tile,
      offsets, sizes, strides);
}

/// Rows [g · chunk, (g + 1) · chunk) of a stacked tile.
static Value stackedPart(OpBuilder &b, Location loc, Value tile, int64_t g,
                         int64_t chunk) {
  return rowSlice(b, loc, tile, idx(b, g * chunk), chunk);
}

FailureOr<Value> ChunkRewriter::emitAnchorRows(OpBuilder &b, Location loc,
                                               const ChunkTiles &tiles) {
  AnchorReadoutOp op = info.anchor;
  int64_t window = op.getWindow();
  int64_t before = window - 1;
  RankedTensorType outType = info.outputType();
  int64_t width = outType.getDimSize(3);
  auto omegaType = cast<RankedTensorType>(op.getOmega().getType());
  int64_t d = omegaType.getDimSize(1);
  Type f32 = b.getF32Type();
  TileBuilder tb(b, loc);
  ValueRange initial = op.getAnchors();
  // G anchor offsets per pass, stacked: row g · c + i of a pass's tiles is
  // query i with its anchor at offset w₀ + g.
  int64_t group = offsetsPerPass(window, chunk, anchorRows);
  int64_t rows = group * chunk;

  // The chunk's queries and the anchor rows of its windows: tokens
  // [start − (W−1), start + c).
  Value q = loadTile(b, loc, 0, op.getQuery(), tiles.batch, tiles.start,
                     tiles.length, tiles.head);
  Value end = arith::AddIOp::create(b, loc, tiles.start, tiles.length);
  int64_t windowRows = chunk + before;
  Value anchorRows[3];
  Value operands[] = {op.getAnchorKey(), op.getAnchorValue(), Value()};
  Value sequence = tiles.sequence ? tiles.sequence : tiles.batch;
  Value sequenceStart = tiles.sequenceStart
                            ? tiles.sequenceStart
                            : arith::ConstantIndexOp::create(b, loc, 0);
  AnchorWindow windowTiles = anchorWindow();
  for (unsigned i = 0; i < 3; ++i)
    anchorRows[i] = windowTiles.loadRows(
        b, loc, operands[i], initial.empty() ? Value() : initial[i],
        tiles.batch, tiles.head, tiles.start, end, windowRows, sequence,
        sequenceStart);
  Value omega = omegaF32(op.getOmega());

  // G slices of `tile` of c rows each, stacked; slice g starts at row
  // offsetOf(g). For the window tiles that is offset w₀ + g: anchor
  // c = i − w of query i is row i + (W−1) − w of them.
  auto stackRows =
      [&](OpBuilder &nb, Location l, Value tile, int64_t cols,
          llvm::function_ref<OpFoldResult(int64_t)> offsetOf) -> Value {
    llvm::SmallVector<int64_t> shape = {rows};
    if (cols)
      shape.push_back(cols);
    Value stacked = tensor::EmptyOp::create(nb, l, shape, f32);
    for (int64_t g = 0; g < group; ++g) {
      Value part = rowSlice(nb, l, tile, offsetOf(g), chunk);
      if (group == 1)
        return part; // one offset: the slice itself, no copy
      auto [at, sizes, strides] =
          rowRange(nb, cast<RankedTensorType>(stacked.getType()),
                   idx(nb, g * chunk), chunk);
      stacked = tensor::InsertSliceOp::create(nb, l, part, stacked, at, sizes,
                                              strides);
    }
    return stacked;
  };
  // The queries, scaled once per chunk: the same for every pass.
  Value queries = windowTiles.scaleQueries(tb, q);
  if (group > 1)
    queries = stackRows(b, loc, queries, d,
                        [&](int64_t) -> OpFoldResult { return idx(b, 0); });

  unsigned fInput = spec.getReadoutInputs().front();
  const PlannedOutput *numPlan = nullptr, *denPlan = nullptr;
  for (const PlannedOutput &out : plan.readouts)
    (out.name == "num" ? numPlan : denPlan) = &out;
  if (!numPlan || !denPlan) {
    return chunkError(info.readout)
           << "LinSimp's monoid must read out num and den";
  }

  // Accumulators over the window, per stacked row: Σ u_c ⊙ num_ic, Σ den_ic
  // over its offsets, and the running maximum of their feature exponents
  // (one shift per row; the rows of a query are brought to one shift when
  // they are summed, after the window).
  const float lowest = -3.0e38f;
  Value accNum = tb.zeros({rows, width});
  Value accDen = tb.zeros({rows});
  Value lowestF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(lowest));
  Value mu =
      linalg::FillOp::create(b, loc, lowestF, tb.empty({rows})).getResult(0);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value cG = arith::ConstantIndexOp::create(b, loc, group);
  Value cW = arith::ConstantIndexOp::create(b, loc, window);
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows2 =
      AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
  using IT = IteratorType;
  bool failedEmission = false;
  auto loop = scf::ForOp::create(
      b, loc, c0, cW, cG, ValueRange{accNum, accDen, mu},
      [&](OpBuilder &nb, Location l, Value w0, ValueRange acc) {
        TileBuilder t(nb, l);
        auto offsetOf = [&](int64_t g) -> OpFoldResult {
          return arith::SubIOp::create(
                     nb, l, arith::ConstantIndexOp::create(nb, l, before - g),
                     w0)
              .getResult();
        };
        Value r = stackRows(nb, l, anchorRows[0], d, offsetOf);
        Value u = stackRows(nb, l, anchorRows[1], width, offsetOf);
        Value valid = stackRows(nb, l, anchorRows[2], 0, offsetOf);
        // x_ic = τ^½ (q_i ⊙ r_c); exponent Ω x − ‖x‖²/2.
        AnchorWindow::Projection projection =
            windowTiles.project(t, queries, r, omega);
        Value halfNorm = projection.halfNorm;
        Value projected = projection.projected;
        // The running maximum over the row's real anchors so far, and the
        // factor that rescales what was accumulated under the old one.
        Value next = acc[2], rescale;
        if (stableFeatures) {
          Value rowMax = t.generic(
              {projected},
              linalg::FillOp::create(nb, l,
                                     Value(arith::ConstantOp::create(
                                         nb, l, nb.getF32FloatAttr(lowest))),
                                     t.empty({rows}))
                  .getResult(0),
              {id2, rows2}, {IT::parallel, IT::reduction},
              [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                return arith::MaximumFOp::create(eb, el, args[0], args[1]);
              });
          next = t.generic(
              {acc[2], rowMax, valid, halfNorm}, t.empty({rows}),
              {id1, id1, id1, id1, id1}, {IT::parallel},
              [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                Value zero =
                    arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(0));
                Value real = arith::CmpFOp::create(
                    eb, el, arith::CmpFPredicate::OGT, args[2], zero);
                Value top = arith::SubFOp::create(eb, el, args[1], args[3]);
                Value candidate =
                    arith::SelectOp::create(eb, el, real, top, args[0]);
                return arith::MaximumFOp::create(eb, el, args[0], candidate);
              });
          rescale = t.generic(
              {acc[2], next}, t.empty({rows}), {id1, id1, id1}, {IT::parallel},
              [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                return math::ExpOp::create(
                    eb, el, arith::SubFOp::create(eb, el, args[0], args[1]));
              });
        }
        // F = m^-½ exp(exponent − μ) for real anchors, 0 for padding.
        Value featuresTile = windowTiles.features(
            t, projection, stableFeatures ? next : Value(), valid);
        ChunkTiles anchorTiles = tiles;
        anchorTiles.tokens[fInput] = featuresTile;
        anchorTiles.readoutRepeat = group;
        FailureOr<Value> num =
            emitOutput(t, *numPlan, anchorTiles, false, {rows, width});
        FailureOr<Value> den = failure();
        if (succeeded(num))
          den = emitOutput(t, *denPlan, anchorTiles, false, {rows});
        if (failed(den)) {
          failedEmission = true;
          scf::YieldOp::create(nb, l, acc);
          return;
        }
        // Σ ← Σ·rescale + u ⊙ num, one multiply-add an element.
        Value sumNum = acc[0], sumDen = acc[1];
        if (stableFeatures)
          sumNum = t.scaleRows(sumNum, rescale);
        sumNum = t.fma(u, *num, sumNum);
        sumDen =
            stableFeatures ? t.fma(sumDen, rescale, *den) : t.add(sumDen, *den);
        // Copied into the carried buffers, updated in place (as the chunk
        // loops do with their state).
        Value results[] = {sumNum, sumDen, next};
        llvm::SmallVector<Value> yields;
        for (unsigned i = 0; i < 3; ++i)
          yields.push_back(
              linalg::CopyOp::create(nb, l, results[i], acc[i]).getResult(0));
        scf::YieldOp::create(nb, l, yields);
      });
  if (failedEmission)
    return failure();
  Value num = loop.getResult(0), den = loop.getResult(1);
  if (group > 1) {
    // Each query's G rows, brought to the largest of their shifts and
    // summed: every (j, c) pair of the query then carries one shift.
    Value top;
    if (stableFeatures) {
      top = stackedPart(b, loc, loop.getResult(2), 0, chunk);
      for (int64_t g = 1; g < group; ++g)
        top = tb.generic(
            {top, stackedPart(b, loc, loop.getResult(2), g, chunk)},
            tb.empty({chunk}), {id1, id1, id1}, {IT::parallel},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              return arith::MaximumFOp::create(nb, l, args[0], args[1]);
            });
    }
    Value sumNum, sumDen;
    for (int64_t g = 0; g < group; ++g) {
      Value partNum = stackedPart(b, loc, num, g, chunk);
      Value partDen = stackedPart(b, loc, den, g, chunk);
      if (stableFeatures) {
        Value factor = tb.generic(
            {stackedPart(b, loc, loop.getResult(2), g, chunk), top},
            tb.empty({chunk}), {id1, id1, id1}, {IT::parallel},
            [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
              return math::ExpOp::create(
                  nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
            });
        partNum = tb.scaleRows(partNum, factor);
        partDen = tb.mul(partDen, factor);
      }
      sumNum = g ? tb.add(sumNum, partNum) : partNum;
      sumDen = g ? tb.add(sumDen, partDen) : partDen;
    }
    num = sumNum;
    den = sumDen;
  }
  // Joint normalisation over every (j, c) pair of the query: no eps (the
  // features are positive; a real query has its own token as an anchor).
  Value inverse =
      tb.generic({den}, tb.empty({chunk}), {id1, id1}, {IT::parallel},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   Value one =
                       arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1));
                   return arith::DivFOp::create(nb, l, one, args[0]);
                 });
  return tb.castTo(tb.scaleRows(num, inverse), outType.getElementType());
}

} // namespace mlir::hla::chunk
