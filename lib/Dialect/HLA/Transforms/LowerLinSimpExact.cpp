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
//===----------------------------------------------------------------------===//

#include "TileBuilder.h"

#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

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

LogicalResult lowerExactLinSimp(LinSimpOp op, int64_t chunk) {
  if (op.getCuSeqlens() || !op.getInitialState().empty()) {
    return op.emitError() << "hla-lower-linsimp-exact: LinSimp's exact "
                             "kernel takes no packed sequences or state";
  }
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  auto vType = cast<RankedTensorType>(op.getValue().getType());
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  for (RankedTensorType t : {qType, vType, outType})
    if (!t.hasStaticShape() || t.getRank() != 4) {
      return op.emitError() << "hla-lower-linsimp-exact: the chunked lowering "
                               "needs static [B, T, H, ...] shapes";
    }
  int64_t batch = qType.getDimSize(0), length = qType.getDimSize(1),
          heads = qType.getDimSize(2), d = qType.getDimSize(3),
          dv = vType.getDimSize(3), window = op.getWindow();
  int64_t before = window - 1, c = chunk;
  int64_t chunks = (length + c - 1) / c;
  double tau =
      cast<AttentionOpInterface>(op.getOperation()).getEffectiveScale();
  Location loc = op.getLoc();
  OpBuilder b(op);
  Type f32 = b.getF32Type();
  MLIRContext *ctx = b.getContext();
  using IT = IteratorType;
  auto cst = [](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  auto fcst = [](OpBuilder &nb, Location l, double v) -> Value {
    return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
  };
  // Rows [first, first + rows) of operand `x` ([B, T, H_x, w]) for query
  // head h, zero outside [0, T), in f32.
  auto rowsOf = [&](OpBuilder &nb, Location l, Value x, Value bi, Value hi,
                    Value first, int64_t rows) -> Value {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t width = type.getDimSize(3);
    int64_t groups = heads / type.getDimSize(2);
    Value kvHead =
        groups == 1
            ? hi
            : Value(arith::DivUIOp::create(nb, l, hi, cst(nb, l, groups)));
    Value lo = arith::MaxSIOp::create(nb, l, first, cst(nb, l, 0));
    Value hiRow = arith::MinSIOp::create(
        nb, l, arith::AddIOp::create(nb, l, first, cst(nb, l, rows)),
        cst(nb, l, length));
    Value count = arith::MaxSIOp::create(
        nb, l, arith::SubIOp::create(nb, l, hiRow, lo), cst(nb, l, 0));
    Value at = arith::SubIOp::create(nb, l, lo, first);
    Type element = type.getElementType();
    Value slice = tensor::ExtractSliceOp::create(
        nb, l, RankedTensorType::get({ShapedType::kDynamic, width}, element), x,
        llvm::ArrayRef<OpFoldResult>{bi, lo, kvHead, idx(nb, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(nb, 1), count, idx(nb, 1),
                                     idx(nb, width)},
        llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1), idx(nb, 1),
                                     idx(nb, 1)});
    Value zero = arith::ConstantOp::create(nb, l, nb.getFloatAttr(element, 0));
    Value tile = linalg::FillOp::create(
                     nb, l, zero,
                     Value(tensor::EmptyOp::create(
                         nb, l, llvm::ArrayRef<int64_t>{rows, width}, element)))
                     .getResult(0);
    tile = tensor::InsertSliceOp::create(
        nb, l, slice, tile, llvm::ArrayRef<OpFoldResult>{at, idx(nb, 0)},
        llvm::ArrayRef<OpFoldResult>{count, idx(nb, width)},
        llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)});
    return TileBuilder(nb, l).castTo(tile, f32);
  };
  const float lowest = -3.0e38f;
  AffineMap id1 = b.getMultiDimIdentityMap(1),
            id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows2 = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx);

  Value outInit = tensor::EmptyOp::create(b, loc, outType.getShape(),
                                          outType.getElementType());
  auto loop = scf::ForallOp::create(
      b, loc, {idx(b, batch), idx(b, chunks), idx(b, heads)},
      ValueRange{outInit}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), ni = body->getArgument(1),
        hi = body->getArgument(2);
  TileBuilder tb(b, loc);
  Value start = arith::MulIOp::create(b, loc, ni, cst(b, loc, c));
  Value valid = arith::MinSIOp::create(
      b, loc, cst(b, loc, c),
      arith::SubIOp::create(b, loc, cst(b, loc, length), start));
  Value q = rowsOf(b, loc, op.getQuery(), bi, hi, start, c);
  Value haloStart = arith::SubIOp::create(b, loc, start, cst(b, loc, before));
  Value rExt = rowsOf(b, loc, op.getAnchorKey(), bi, hi, haloStart, c + before);
  Value uExt =
      rowsOf(b, loc, op.getAnchorValue(), bi, hi, haloStart, c + before);
  Value accNum = tb.zeros({c, dv}), accDen = tb.zeros({c});
  Value mu = linalg::FillOp::create(b, loc, fcst(b, loc, lowest), tb.empty({c}))
                 .getResult(0);
  auto windowLoop = scf::ForOp::create(
      b, loc, cst(b, loc, 0), cst(b, loc, window), cst(b, loc, 1),
      ValueRange{accNum, accDen, mu},
      [&](OpBuilder &wb, Location wl, Value w, ValueRange acc) {
        TileBuilder t(wb, wl);
        Value offset = arith::SubIOp::create(wb, wl, cst(wb, wl, before), w);
        auto slice = [&](Value tile, int64_t cols) -> Value {
          return tensor::ExtractSliceOp::create(
              wb, wl, RankedTensorType::get({c, cols}, f32), tile,
              llvm::ArrayRef<OpFoldResult>{offset, idx(wb, 0)},
              llvm::ArrayRef<OpFoldResult>{idx(wb, c), idx(wb, cols)},
              llvm::ArrayRef<OpFoldResult>{idx(wb, 1), idx(wb, 1)});
        };
        Value r = slice(rExt, d), u = slice(uExt, dv);
        // x_ic = τ (q_i ⊙ r_c); anchor c = i − w is real when c ≥ 0.
        Value x = t.generic(
            {q, r}, t.empty({c, d}), {id2, id2, id2},
            {IT::parallel, IT::parallel},
            [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
              return arith::MulFOp::create(
                  eb, el, arith::MulFOp::create(eb, el, args[0], args[1]),
                  fcst(eb, el, tau));
            });
        Value keyChunks = arith::AddIOp::create(wb, wl, ni, cst(wb, wl, 1));
        auto keyLoop = scf::ForOp::create(
            wb, wl, cst(wb, wl, 0), keyChunks, cst(wb, wl, 1), acc,
            [&](OpBuilder &kb, Location kl, Value m, ValueRange inner) {
              TileBuilder kt(kb, kl);
              Value keyStart = arith::MulIOp::create(kb, kl, m, cst(kb, kl, c));
              Value k = rowsOf(kb, kl, op.getKey(), bi, hi, keyStart, c);
              Value v = rowsOf(kb, kl, op.getValue(), bi, hi, keyStart, c);
              Value scores = kt.matmul(x, k, false, /*transB=*/true);
              // Pair (i, j) counts when anchor i − w exists, j ≤ i, and i
              // is a real query.
              auto inside = [&](OpBuilder &eb, Location el,
                                unsigned jDim = 1) -> Value {
                Value i = linalg::IndexOp::create(eb, el, 0);
                Value j = linalg::IndexOp::create(eb, el, jDim);
                Value qi = arith::AddIOp::create(eb, el, start, i);
                Value kj = arith::AddIOp::create(eb, el, keyStart, j);
                Value causal = arith::CmpIOp::create(
                    eb, el, arith::CmpIPredicate::sle, kj, qi);
                Value anchor = arith::CmpIOp::create(
                    eb, el, arith::CmpIPredicate::sge,
                    arith::SubIOp::create(eb, el, qi, w), cst(eb, el, 0));
                Value real = arith::CmpIOp::create(
                    eb, el, arith::CmpIPredicate::slt, i, valid);
                return arith::AndIOp::create(
                    eb, el, arith::AndIOp::create(eb, el, causal, anchor),
                    real);
              };
              Value rowMax = kt.generic(
                  {scores},
                  linalg::FillOp::create(kb, kl, fcst(kb, kl, lowest),
                                         kt.empty({c}))
                      .getResult(0),
                  {id2, rows2}, {IT::parallel, IT::reduction},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    Value s = arith::SelectOp::create(
                        eb, el, inside(eb, el), args[0], fcst(eb, el, lowest));
                    return arith::MaximumFOp::create(eb, el, s, args[1]);
                  });
              Value next = kt.generic(
                  {inner[2], rowMax}, kt.empty({c}), {id1, id1, id1},
                  {IT::parallel},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    return arith::MaximumFOp::create(eb, el, args[0], args[1]);
                  });
              Value rescale = kt.generic(
                  {inner[2], next}, kt.empty({c}), {id1, id1, id1},
                  {IT::parallel},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    return math::ExpOp::create(
                        eb, el,
                        arith::SubFOp::create(eb, el, args[0], args[1]));
                  });
              Value weights = kt.generic(
                  {scores, next}, kt.empty({c, c}), {id2, rows2, id2},
                  {IT::parallel, IT::parallel},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    Value e = math::ExpOp::create(
                        eb, el,
                        arith::SubFOp::create(eb, el, args[0], args[1]));
                    return arith::SelectOp::create(eb, el, inside(eb, el), e,
                                                   fcst(eb, el, 0.0));
                  });
              // Σ_j w_ij v_j over the pairs inside only: a plain product
              // would add 0 · v_j for the later keys, NaN where v_j is not
              // finite (causal isolation).
              AffineMap ij = AffineMap::get(
                  3, 0, {kb.getAffineDimExpr(0), kb.getAffineDimExpr(2)}, ctx);
              AffineMap jn = AffineMap::get(
                  3, 0, {kb.getAffineDimExpr(2), kb.getAffineDimExpr(1)}, ctx);
              AffineMap in = AffineMap::get(
                  3, 0, {kb.getAffineDimExpr(0), kb.getAffineDimExpr(1)}, ctx);
              Value weighted = kt.generic(
                  {weights, v}, kt.zeros({c, dv}), {ij, jn, in},
                  {IT::parallel, IT::parallel, IT::reduction},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    Value term =
                        arith::MulFOp::create(eb, el, args[0], args[1]);
                    Value kept = arith::SelectOp::create(
                        eb, el, inside(eb, el, 2), term, fcst(eb, el, 0.0));
                    return arith::AddFOp::create(eb, el, args[2], kept);
                  });
              Value num =
                  kt.add(kt.scaleRows(inner[0], rescale), kt.mul(u, weighted));
              Value rowSums = kt.generic(
                  {weights}, kt.zeros({c}), {id2, rows2},
                  {IT::parallel, IT::reduction},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    return arith::AddFOp::create(eb, el, args[0], args[1]);
                  });
              Value den = kt.add(kt.mul(inner[1], rescale), rowSums);
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
  Value inverse = tb.generic(
      {windowLoop.getResult(1)}, tb.empty({c}), {id1, id1}, {IT::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::DivFOp::create(nb, l, fcst(nb, l, 1.0), args[0]);
      });
  Value rows = tb.castTo(tb.scaleRows(windowLoop.getResult(0), inverse),
                         outType.getElementType());
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
  }
};

} // namespace
