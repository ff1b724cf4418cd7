//===- LowerLinSimpExact.cpp - LinSimp's exact kernel in chunks -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// LinSimp with kernel = exact has no finite state to chunk: every query
// scores every earlier key against each anchor of its window under one
// softmax. This pass lowers it to one scf.forall over (batch, query chunk,
// head) whose body streams the key chunks up to the query's with a running
// maximum (the online softmax), per anchor offset.
//
// Its backward (hla.linsimp_exact_vjp) fixes each query's log-normaliser
// L_i (the forward's loops, once more) so that o_i = Σ_{j,c} P_ijc (u_c ⊙
// v_j) with P = exp(s − L) is a plain sum of (anchor offset, key chunk)
// blocks, each of which is differentiated in reverse (ReverseDiff.h),
// seeded with the rows' cotangent ḡ for the weighted sum and −ḡ · o for
// the normaliser's. Keys and anchors get terms from many query chunks, so
// one loop per (batch entry, head) runs over the query chunks, adding into
// whole-sequence gradients.
//
//===----------------------------------------------------------------------===//

#include "TileBuilder.h"

#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"
#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

#define DEBUG_TYPE "hla-lower-linsimp-exact"

namespace mlir::hla {
#define GEN_PASS_DEF_HLALOWERLINSIMPEXACTPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;
using utils::IteratorType;

namespace {

OpFoldResult idx(OpBuilder &b, int64_t v) { return b.getIndexAttr(v); }

Value cst(OpBuilder &b, Location l, int64_t v) {
  return arith::ConstantIndexOp::create(b, l, v);
}

Value fcst(OpBuilder &b, Location l, double v) {
  return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
}

const float kLowest = -3.0e38f;

/// The exact kernel's tiles for one op's shapes: chunks of `c` queries, key
/// chunks of c keys, the window's W − 1 earlier anchors.
struct ExactTiles {
  int64_t length, heads, d, dv, window, c;
  double tau;

  int64_t before() const { return window - 1; }

  /// Rows [first, first + rows) of operand `x` ([B, T, H_x, w]) for query
  /// head h, zero outside [0, T), in f32.
  Value rowsOf(OpBuilder &b, Location l, Value x, Value bi, Value hi,
               Value first, int64_t rows) const {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t width = type.getDimSize(3);
    int64_t groups = heads / type.getDimSize(2);
    Value kvHead =
        groups == 1
            ? hi
            : Value(arith::DivUIOp::create(b, l, hi, cst(b, l, groups)));
    Value lo = arith::MaxSIOp::create(b, l, first, cst(b, l, 0));
    Value hiRow = arith::MinSIOp::create(
        b, l, arith::AddIOp::create(b, l, first, cst(b, l, rows)),
        cst(b, l, length));
    Value count = arith::MaxSIOp::create(
        b, l, arith::SubIOp::create(b, l, hiRow, lo), cst(b, l, 0));
    Value at = arith::SubIOp::create(b, l, lo, first);
    Type element = type.getElementType();
    Value slice = tensor::ExtractSliceOp::create(
        b, l, RankedTensorType::get({ShapedType::kDynamic, width}, element), x,
        llvm::ArrayRef<OpFoldResult>{bi, lo, kvHead, idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), count, idx(b, 1),
                                     idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                     idx(b, 1)});
    Value zero = arith::ConstantOp::create(b, l, b.getFloatAttr(element, 0));
    Value tile = linalg::FillOp::create(
                     b, l, zero,
                     Value(tensor::EmptyOp::create(
                         b, l, llvm::ArrayRef<int64_t>{rows, width}, element)))
                     .getResult(0);
    tile = tensor::InsertSliceOp::create(
        b, l, slice, tile, llvm::ArrayRef<OpFoldResult>{at, idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{count, idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
    return TileBuilder(b, l).castTo(tile, b.getF32Type());
  }

  /// Rows [before − w, before − w + c) of a window tile: the anchors i − w
  /// of the chunk's queries i.
  Value offsetRows(OpBuilder &b, Location l, Value tile, Value w) const {
    int64_t cols = TileBuilder::shapeOf(tile)[1];
    Value offset = arith::SubIOp::create(b, l, cst(b, l, before()), w);
    return tensor::ExtractSliceOp::create(
        b, l, RankedTensorType::get({c, cols}, b.getF32Type()), tile,
        llvm::ArrayRef<OpFoldResult>{offset, idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, c), idx(b, cols)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
  }

  /// Query chunk `ni` of (bi, hi): its first token, its real rows, its
  /// queries [c, d] and its window's anchor rows r, u [c + W − 1, ...]
  /// (tokens start − (W − 1) on).
  struct QueryChunk {
    Value start, valid, q, rExt, uExt;
  };
  QueryChunk loadQueryChunk(OpBuilder &b, Location l, Value query,
                            Value anchorKey, Value anchorValue, Value bi,
                            Value hi, Value ni) const {
    QueryChunk chunk;
    chunk.start = arith::MulIOp::create(b, l, ni, cst(b, l, c));
    chunk.valid = arith::MinSIOp::create(
        b, l, cst(b, l, c),
        arith::SubIOp::create(b, l, cst(b, l, length), chunk.start));
    chunk.q = rowsOf(b, l, query, bi, hi, chunk.start, c);
    Value haloStart =
        arith::SubIOp::create(b, l, chunk.start, cst(b, l, before()));
    chunk.rExt = rowsOf(b, l, anchorKey, bi, hi, haloStart, c + before());
    chunk.uExt = rowsOf(b, l, anchorValue, bi, hi, haloStart, c + before());
    return chunk;
  }

  /// Whether pair (query row i, key row j) of a block counts: anchor i − w
  /// exists, key ≤ query, and the query is real (i < valid). The block's
  /// queries start at `start`, its keys at `keyStart`.
  struct Block {
    Value start, keyStart, w, valid;
  };
  Value inside(OpBuilder &b, Location l, const Block &block,
               unsigned jDim = 1) const {
    Value i = linalg::IndexOp::create(b, l, 0);
    Value j = linalg::IndexOp::create(b, l, jDim);
    Value qi = arith::AddIOp::create(b, l, block.start, i);
    Value kj = arith::AddIOp::create(b, l, block.keyStart, j);
    Value causal =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, kj, qi);
    Value anchor = arith::CmpIOp::create(
        b, l, arith::CmpIPredicate::sge,
        arith::SubIOp::create(b, l, qi, block.w), cst(b, l, 0));
    Value real =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, block.valid);
    return arith::AndIOp::create(
        b, l, arith::AndIOp::create(b, l, causal, anchor), real);
  }

  /// A block's pair weights exp(s − shift) (0 outside), Σ_j w_ij v_j and
  /// Σ_j w_ij, for scores s = x kᵀ [c, c].
  struct Sums {
    Value weights, weighted, rowSums;
  };
  Sums blockSums(TileBuilder &t, const Block &block, Value scores, Value shift,
                 Value v) const {
    OpBuilder &b = t.getBuilder();
    MLIRContext *ctx = b.getContext();
    using IT = IteratorType;
    AffineMap id2 = b.getMultiDimIdentityMap(2);
    AffineMap rows2 = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx);
    Sums sums;
    sums.weights = t.generic(
        {scores, shift}, t.empty({c, c}), {id2, rows2, id2},
        {IT::parallel, IT::parallel},
        [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
          Value e = math::ExpOp::create(
              eb, el, arith::SubFOp::create(eb, el, args[0], args[1]));
          return arith::SelectOp::create(eb, el, inside(eb, el, block), e,
                                         fcst(eb, el, 0.0));
        });
    // Σ_j w_ij v_j over the pairs inside only: a plain product would add
    // 0 · v_j for the later keys, NaN where v_j is not finite (causal
    // isolation).
    AffineMap ij = AffineMap::get(
        3, 0, {b.getAffineDimExpr(0), b.getAffineDimExpr(2)}, ctx);
    AffineMap jn = AffineMap::get(
        3, 0, {b.getAffineDimExpr(2), b.getAffineDimExpr(1)}, ctx);
    AffineMap in = AffineMap::get(
        3, 0, {b.getAffineDimExpr(0), b.getAffineDimExpr(1)}, ctx);
    sums.weighted = t.generic(
        {sums.weights, v}, t.zeros({c, dv}), {ij, jn, in},
        {IT::parallel, IT::parallel, IT::reduction},
        [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
          Value term = arith::MulFOp::create(eb, el, args[0], args[1]);
          Value kept = arith::SelectOp::create(eb, el, inside(eb, el, block, 2),
                                               term, fcst(eb, el, 0.0));
          return arith::AddFOp::create(eb, el, args[2], kept);
        });
    sums.rowSums =
        t.generic({sums.weights}, t.zeros({c}), {id2, rows2},
                  {IT::parallel, IT::reduction},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    return arith::AddFOp::create(eb, el, args[0], args[1]);
                  });
    return sums;
  }

  /// x_ic = τ (q_i ⊙ r_c) for anchor rows `r`.
  Value anchorQueries(TileBuilder &t, Value q, Value r) const {
    OpBuilder &b = t.getBuilder();
    AffineMap id2 = b.getMultiDimIdentityMap(2);
    double scale = tau;
    return t.generic({q, r}, t.empty({c, d}), {id2, id2, id2},
                     {IteratorType::parallel, IteratorType::parallel},
                     [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                       return arith::MulFOp::create(
                           eb, el,
                           arith::MulFOp::create(eb, el, args[0], args[1]),
                           fcst(eb, el, scale));
                     });
  }

  /// The rows' sums num = Σ_c u_c ⊙ Σ_j w v_j, den = Σ_{c,j} w and their
  /// shift μ (the running maximum) for query chunk `ni` of (bi, hi), its
  /// queries `q` and window tiles `rExt`, `uExt`.
  std::array<Value, 3> windowSums(OpBuilder &b, Location loc, Value keyOperand,
                                  Value valueOperand, Value bi, Value hi,
                                  Value ni, Value start, Value valid, Value q,
                                  Value rExt, Value uExt) const {
    using IT = IteratorType;
    TileBuilder tb(b, loc);
    AffineMap id1 = b.getMultiDimIdentityMap(1),
              id2 = b.getMultiDimIdentityMap(2);
    AffineMap rows2 =
        AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
    Value mu =
        linalg::FillOp::create(b, loc, fcst(b, loc, kLowest), tb.empty({c}))
            .getResult(0);
    auto windowLoop = scf::ForOp::create(
        b, loc, cst(b, loc, 0), cst(b, loc, window), cst(b, loc, 1),
        ValueRange{tb.zeros({c, dv}), tb.zeros({c}), mu},
        [&](OpBuilder &wb, Location wl, Value w, ValueRange acc) {
          TileBuilder t(wb, wl);
          Value u = offsetRows(wb, wl, uExt, w);
          Value x = anchorQueries(t, q, offsetRows(wb, wl, rExt, w));
          Value keyChunks = arith::AddIOp::create(wb, wl, ni, cst(wb, wl, 1));
          auto keyLoop = scf::ForOp::create(
              wb, wl, cst(wb, wl, 0), keyChunks, cst(wb, wl, 1), acc,
              [&](OpBuilder &kb, Location kl, Value m, ValueRange inner) {
                TileBuilder kt(kb, kl);
                Block block{start,
                            arith::MulIOp::create(kb, kl, m, cst(kb, kl, c)), w,
                            valid};
                Value k = rowsOf(kb, kl, keyOperand, bi, hi, block.keyStart, c);
                Value v =
                    rowsOf(kb, kl, valueOperand, bi, hi, block.keyStart, c);
                Value scores = kt.matmul(x, k, false, /*transB=*/true);
                Value rowMax = kt.generic(
                    {scores},
                    linalg::FillOp::create(kb, kl, fcst(kb, kl, kLowest),
                                           kt.empty({c}))
                        .getResult(0),
                    {id2, rows2}, {IT::parallel, IT::reduction},
                    [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                      Value s = arith::SelectOp::create(
                          eb, el, inside(eb, el, block), args[0],
                          fcst(eb, el, kLowest));
                      return arith::MaximumFOp::create(eb, el, s, args[1]);
                    });
                Value next = kt.generic(
                    {inner[2], rowMax}, kt.empty({c}), {id1, id1, id1},
                    {IT::parallel},
                    [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                      return arith::MaximumFOp::create(eb, el, args[0],
                                                       args[1]);
                    });
                Value rescale = kt.generic(
                    {inner[2], next}, kt.empty({c}), {id1, id1, id1},
                    {IT::parallel},
                    [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                      return math::ExpOp::create(
                          eb, el,
                          arith::SubFOp::create(eb, el, args[0], args[1]));
                    });
                Sums sums = blockSums(kt, block, scores, next, v);
                Value num = kt.add(kt.scaleRows(inner[0], rescale),
                                   kt.mul(u, sums.weighted));
                Value den = kt.add(kt.mul(inner[1], rescale), sums.rowSums);
                Value results[] = {num, den, next};
                llvm::SmallVector<Value> yields;
                for (unsigned i = 0; i < 3; ++i)
                  yields.push_back(
                      linalg::CopyOp::create(kb, kl, results[i], inner[i])
                          .getResult(0));
                scf::YieldOp::create(kb, kl, yields);
              });
          scf::YieldOp::create(wb, wl, keyLoop.getResults());
        });
    return {windowLoop.getResult(0), windowLoop.getResult(1),
            windowLoop.getResult(2)};
  }
};

/// Shapes and τ of a LinSimp op (exact kernel) or its backward, or failure
/// with a diagnostic.
FailureOr<ExactTiles> exactTiles(Operation *op, Value query, Value value,
                                 Value output, int64_t window, double tau,
                                 int64_t chunk) {
  auto qType = cast<RankedTensorType>(query.getType());
  auto vType = cast<RankedTensorType>(value.getType());
  auto outType = cast<RankedTensorType>(output.getType());
  for (RankedTensorType t : {qType, vType, outType})
    if (!t.hasStaticShape() || t.getRank() != 4) {
      return op->emitError() << "hla-lower-linsimp-exact: the chunked "
                                "lowering needs static [B, T, H, ...] shapes";
    }
  return ExactTiles{qType.getDimSize(1),
                    qType.getDimSize(2),
                    qType.getDimSize(3),
                    vType.getDimSize(3),
                    window,
                    chunk,
                    tau};
}

LogicalResult lowerExactLinSimp(LinSimpOp op, int64_t chunk) {
  if (op.getCuSeqlens() || !op.getInitialState().empty()) {
    return op.emitError() << "hla-lower-linsimp-exact: LinSimp's exact "
                             "kernel takes no packed sequences or state";
  }
  double tau =
      cast<AttentionOpInterface>(op.getOperation()).getEffectiveScale();
  FailureOr<ExactTiles> tiles =
      exactTiles(op, op.getQuery(), op.getValue(), op.getOutput(),
                 op.getWindow(), tau, chunk);
  if (failed(tiles))
    return failure();
  const ExactTiles &x = *tiles;
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  int64_t batch = outType.getDimSize(0), c = chunk, dv = x.dv;
  int64_t chunks = (x.length + c - 1) / c;
  Location loc = op.getLoc();
  OpBuilder b(op);
  using IT = IteratorType;
  AffineMap id1 = b.getMultiDimIdentityMap(1);

  Value outInit = tensor::EmptyOp::create(b, loc, outType.getShape(),
                                          outType.getElementType());
  auto loop = scf::ForallOp::create(
      b, loc, {idx(b, batch), idx(b, chunks), idx(b, x.heads)},
      ValueRange{outInit}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), ni = body->getArgument(1),
        hi = body->getArgument(2);
  TileBuilder tb(b, loc);
  ExactTiles::QueryChunk chunkTiles =
      x.loadQueryChunk(b, loc, op.getQuery(), op.getAnchorKey(),
                       op.getAnchorValue(), bi, hi, ni);
  Value start = chunkTiles.start, valid = chunkTiles.valid;
  auto [num, den, mu] =
      x.windowSums(b, loc, op.getKey(), op.getValue(), bi, hi, ni, start, valid,
                   chunkTiles.q, chunkTiles.rExt, chunkTiles.uExt);
  (void)mu;
  Value inverse = tb.generic(
      {den}, tb.empty({c}), {id1, id1}, {IT::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::DivFOp::create(nb, l, fcst(nb, l, 1.0), args[0]);
      });
  Value rows = tb.castTo(tb.scaleRows(num, inverse), outType.getElementType());
  Value realRows = tensor::ExtractSliceOp::create(
      b, loc,
      RankedTensorType::get({ShapedType::kDynamic, dv},
                            outType.getElementType()),
      rows, llvm::ArrayRef<OpFoldResult>{idx(b, 0), idx(b, 0)},
      llvm::ArrayRef<OpFoldResult>{valid, idx(b, dv)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
  b.setInsertionPointToStart(loop.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, realRows, body->getArgument(3),
      llvm::ArrayRef<OpFoldResult>{bi, start, hi, idx(b, 0)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), valid, idx(b, 1), idx(b, dv)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1), idx(b, 1)});
  op.getOutput().replaceAllUsesWith(loop.getResult(0));
  op.erase();
  return success();
}

/// `acc` + `x` written into `acc`.
Value addInto(TileBuilder &t, Value acc, Value x) {
  int64_t rank = TileBuilder::shapeOf(acc).size();
  AffineMap id = t.getBuilder().getMultiDimIdentityMap(rank);
  return t.generic(
      {x}, acc, {id, id},
      llvm::SmallVector<IteratorType>(rank, IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::AddFOp::create(nb, l, args[1], args[0]);
      });
}

/// `buffer` ([N, w]) with `tile` ([rows, w]) added at row `first`.
Value addRows(TileBuilder &t, Value buffer, Value tile, Value first) {
  OpBuilder &b = t.getBuilder();
  Location l = t.getLoc();
  llvm::ArrayRef<int64_t> shape = TileBuilder::shapeOf(tile);
  llvm::SmallVector<OpFoldResult> at = {first, idx(b, 0)},
                                  sizes = {idx(b, shape[0]), idx(b, shape[1])},
                                  ones = {idx(b, 1), idx(b, 1)};
  Value part = tensor::ExtractSliceOp::create(
      b, l, RankedTensorType::get(shape, b.getF32Type()), buffer, at, sizes,
      ones);
  return tensor::InsertSliceOp::create(b, l, addInto(t, part, tile), buffer, at,
                                       sizes, ones);
}

LogicalResult lowerExactVjp(LinSimpExactVjpOp op, int64_t chunk) {
  FailureOr<ExactTiles> tiles =
      exactTiles(op, op.getQuery(), op.getValue(), op.getCotangent(),
                 op.getWindow(), op.getScale().convertToDouble(), chunk);
  if (failed(tiles))
    return failure();
  const ExactTiles &x = *tiles;
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  int64_t batch = qType.getDimSize(0), heads = x.heads, length = x.length;
  int64_t c = chunk, d = x.d, dv = x.dv, before = x.before();
  int64_t chunks = (length + c - 1) / c, padded = chunks * c;
  Location loc = op.getLoc();
  OpBuilder b(op);
  Type f32 = b.getF32Type();
  using IT = IteratorType;
  AffineMap id1 = b.getMultiDimIdentityMap(1);

  // Pass A, per (batch entry, query chunk, head): each query's
  // log-normaliser L = μ + log D (0 for padding rows) and −ḡ · o.
  Value perQuery = tensor::EmptyOp::create(
      b, loc, llvm::ArrayRef<int64_t>{batch, heads, length}, f32);
  auto passA = scf::ForallOp::create(
      b, loc, {idx(b, batch), idx(b, chunks), idx(b, heads)},
      ValueRange{perQuery, perQuery}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = passA.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), ni = body->getArgument(1),
          hi = body->getArgument(2);
    TileBuilder tb(b, loc);
    ExactTiles::QueryChunk chunkTiles =
        x.loadQueryChunk(b, loc, op.getQuery(), op.getAnchorKey(),
                         op.getAnchorValue(), bi, hi, ni);
    Value start = chunkTiles.start, valid = chunkTiles.valid;
    Value g = x.rowsOf(b, loc, op.getCotangent(), bi, hi, start, c);
    auto [num, den, mu] =
        x.windowSums(b, loc, op.getKey(), op.getValue(), bi, hi, ni, start,
                     valid, chunkTiles.q, chunkTiles.rExt, chunkTiles.uExt);
    Value inverse = tb.generic(
        {den}, tb.empty({c}), {id1, id1}, {IT::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value positive = arith::CmpFOp::create(
              nb, l, arith::CmpFPredicate::OGT, args[0], fcst(nb, l, 0));
          return arith::SelectOp::create(
              nb, l, positive,
              arith::DivFOp::create(nb, l, fcst(nb, l, 1.0), args[0]),
              fcst(nb, l, 0));
        });
    Value logNorm =
        tb.generic({mu, den}, tb.empty({c}), {id1, id1, id1}, {IT::parallel},
                   [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                     Value positive =
                         arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                               args[1], fcst(nb, l, 0));
                     Value value = arith::AddFOp::create(
                         nb, l, args[0], math::LogOp::create(nb, l, args[1]));
                     return arith::SelectOp::create(nb, l, positive, value,
                                                    fcst(nb, l, 0));
                   });
    Value out = tb.scaleRows(num, inverse);
    Value minusDelta = tb.scale(tb.dotRows(g, out), -1.0);
    Value results[] = {logNorm, minusDelta};
    Value real[2];
    for (unsigned i = 0; i < 2; ++i)
      real[i] = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({ShapedType::kDynamic}, f32),
          results[i], llvm::ArrayRef<OpFoldResult>{idx(b, 0)},
          llvm::ArrayRef<OpFoldResult>{valid},
          llvm::ArrayRef<OpFoldResult>{idx(b, 1)});
    b.setInsertionPointToStart(passA.getTerminator().getBody());
    for (unsigned i = 0; i < 2; ++i) {
      tensor::ParallelInsertSliceOp::create(
          b, loc, real[i], body->getArgument(3 + i),
          llvm::ArrayRef<OpFoldResult>{bi, hi, start},
          llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), valid},
          llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1)});
    }
  }
  Value logNorms = passA.getResult(0), minusDeltas = passA.getResult(1);

  // Pass B, per (batch entry, head): the query chunks in turn, each
  // (offset, key chunk) block reversed; keys' and anchors' gradients added
  // into whole-sequence rows (anchors' from W − 1 rows before token 0,
  // keys' up to the last chunk's end: rows outside get zeros).
  Value operands[] = {op.getQuery(), op.getKey(), op.getValue(),
                      op.getAnchorKey(), op.getAnchorValue()};
  llvm::SmallVector<Value> inits;
  for (Value operand : operands) {
    auto type = cast<RankedTensorType>(operand.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  auto passB = scf::ForallOp::create(b, loc, {idx(b, batch), idx(b, heads)},
                                     inits, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = passB.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  TileBuilder tb(b, loc);
  // Row offsets of each buffer: q, k, v from token 0; r, u from token
  // −(W − 1).
  int64_t offsetOf[] = {0, 0, 0, before, before};
  llvm::SmallVector<Value> buffers;
  for (unsigned i = 0; i < 5; ++i)
    buffers.push_back(
        tb.zeros({padded + offsetOf[i], i == 2 || i == 4 ? dv : d}));
  bool failedReverse = false;
  auto queryLoop = scf::ForOp::create(
      b, loc, cst(b, loc, 0), cst(b, loc, chunks), cst(b, loc, 1), buffers,
      [&](OpBuilder &nb, Location l, Value ni, ValueRange bufs) {
        TileBuilder t(nb, l);
        ExactTiles::QueryChunk chunkTiles =
            x.loadQueryChunk(nb, l, op.getQuery(), op.getAnchorKey(),
                             op.getAnchorValue(), bi, hi, ni);
        Value start = chunkTiles.start, valid = chunkTiles.valid;
        Value q = chunkTiles.q, rExt = chunkTiles.rExt, uExt = chunkTiles.uExt;
        Value g = x.rowsOf(nb, l, op.getCotangent(), bi, hi, start, c);
        auto perQueryRows = [&](Value all) {
          Value slice = tensor::ExtractSliceOp::create(
              nb, l, RankedTensorType::get({ShapedType::kDynamic}, f32), all,
              llvm::ArrayRef<OpFoldResult>{bi, hi, start},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1), valid},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1), idx(nb, 1)});
          return tensor::InsertSliceOp::create(
              nb, l, slice, t.zeros({c}),
              llvm::ArrayRef<OpFoldResult>{idx(nb, 0)},
              llvm::ArrayRef<OpFoldResult>{valid},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1)});
        };
        Value logNorm = perQueryRows(logNorms);
        Value minusDelta = perQueryRows(minusDeltas);
        // Carried over offsets and key chunks: q's, the window's r and u
        // rows', and the keys' and values' whole rows.
        Value carried[] = {t.zeros({c, d}), t.zeros({c + before, d}),
                           t.zeros({c + before, dv}), bufs[1], bufs[2]};
        auto windowLoop = scf::ForOp::create(
            nb, l, cst(nb, l, 0), cst(nb, l, x.window), cst(nb, l, 1), carried,
            [&](OpBuilder &wb, Location wl, Value w, ValueRange acc) {
              Value keyChunks =
                  arith::AddIOp::create(wb, wl, ni, cst(wb, wl, 1));
              auto keyLoop = scf::ForOp::create(
                  wb, wl, cst(wb, wl, 0), keyChunks, cst(wb, wl, 1), acc,
                  [&](OpBuilder &kb, Location kl, Value m, ValueRange inner) {
                    TileBuilder kt(kb, kl);
                    ExactTiles::Block block{
                        start, arith::MulIOp::create(kb, kl, m, cst(kb, kl, c)),
                        w, valid};
                    Value k = x.rowsOf(kb, kl, op.getKey(), bi, hi,
                                       block.keyStart, c);
                    Value v = x.rowsOf(kb, kl, op.getValue(), bi, hi,
                                       block.keyStart, c);
                    // The block under the fixed normaliser, recorded.
                    OpRecorder recorder(kb);
                    Value u = x.offsetRows(kb, kl, uExt, w);
                    Value xq =
                        x.anchorQueries(kt, q, x.offsetRows(kb, kl, rExt, w));
                    Value scores = kt.matmul(xq, k, false, /*transB=*/true);
                    ExactTiles::Sums sums =
                        x.blockSums(kt, block, scores, logNorm, v);
                    Value num = kt.mul(u, sums.weighted);
                    FailureOr<llvm::SmallVector<Value>> grads =
                        emitReverseDiff(kb, kl, recorder.recorded(),
                                        {{num, g}, {sums.rowSums, minusDelta}},
                                        {q, rExt, uExt, k, v});
                    if (failed(grads)) {
                      failedReverse = true;
                      scf::YieldOp::create(kb, kl, inner);
                      return;
                    }
                    scf::YieldOp::create(
                        kb, kl,
                        ValueRange{
                            addInto(kt, inner[0], (*grads)[0]),
                            addInto(kt, inner[1], (*grads)[1]),
                            addInto(kt, inner[2], (*grads)[2]),
                            addRows(kt, inner[3], (*grads)[3], block.keyStart),
                            addRows(kt, inner[4], (*grads)[4],
                                    block.keyStart)});
                  });
              scf::YieldOp::create(wb, wl, keyLoop.getResults());
            });
        ValueRange sums = windowLoop.getResults();
        // The window's rows start at token start − (W − 1): row `start` of
        // the anchors' buffers.
        scf::YieldOp::create(nb, l,
                             ValueRange{addRows(t, bufs[0], sums[0], start),
                                        sums[3], sums[4],
                                        addRows(t, bufs[3], sums[1], start),
                                        addRows(t, bufs[4], sums[2], start)});
      });
  if (failedReverse)
    return op.emitError()
           << "hla-lower-linsimp-exact: the backward's blocks are not derived";
  for (unsigned i = 0; i < 5; ++i) {
    auto type = cast<RankedTensorType>(operands[i].getType());
    int64_t width = type.getDimSize(3);
    b.setInsertionPoint(passB.getTerminator());
    Value rows = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({length, width}, f32),
        queryLoop.getResult(i),
        llvm::ArrayRef<OpFoldResult>{idx(b, offsetOf[i]), idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, length), idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
    rows = TileBuilder(b, loc).castTo(rows, type.getElementType());
    b.setInsertionPointToEnd(passB.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, loc, rows, body->getArgument(2 + i),
        llvm::ArrayRef<OpFoldResult>{bi, idx(b, 0), hi, idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, length), idx(b, 1),
                                     idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                     idx(b, 1)});
  }
  op->replaceAllUsesWith(passB.getResults());
  op->erase();
  return success();
}

struct HLALowerLinSimpExactPass
    : public hla::impl::HLALowerLinSimpExactPassBase<HLALowerLinSimpExactPass> {
  using HLALowerLinSimpExactPassBase::HLALowerLinSimpExactPassBase;

  void runOnOperation() override {
    if (chunkSize < 1) {
      getOperation()->emitError()
          << "hla-lower-linsimp-exact: chunk-size must be at least 1, got "
          << int64_t(chunkSize);
      return signalPassFailure();
    }
    llvm::SmallVector<LinSimpOp> exact;
    getOperation()->walk([&](LinSimpOp op) {
      if (op.getKernel() == FeatureKernel::exact)
        exact.push_back(op);
    });
    for (LinSimpOp op : exact)
      if (failed(lowerExactLinSimp(op, chunkSize)))
        return signalPassFailure();
    llvm::SmallVector<LinSimpExactVjpOp> vjps;
    getOperation()->walk([&](LinSimpExactVjpOp op) { vjps.push_back(op); });
    for (LinSimpExactVjpOp op : vjps)
      if (failed(lowerExactVjp(op, chunkSize)))
        return signalPassFailure();
  }
};

} // namespace
