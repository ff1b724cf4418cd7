//===- ChunkDeltaRule.cpp - The gated delta rule's chunks -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// KDA's transition is matrix-valued (S -> M S + B), so its chunks have no
// index plan: a chunk is summarised and read out in the WY/UT form
// (SEMANTICS.md §6).
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;
using utils::IteratorType;

namespace mlir::hla::chunk {

/// The least log-decay one token applies inside a chunk (see Γ below):
/// e^-64 ≈ 1.6e-28, far below f32's rounding unit (1.2e-7).
static constexpr double kLogDecayFloor = -64.0;

/// Tokens per block of the pair products P (see `pairs` below).
static constexpr int64_t kPairBlock = 16;

FailureOr<llvm::SmallVector<Value>>
ChunkRewriter::emitDeltaRule(OpBuilder &b, Location loc,
                             const ChunkTiles &tiles, DeltaPart part,
                             Value carried) {
  if (!deltaChunks) {
    Value g = info.segment.getInputs()[*spec.findInput("g")];
    deltaChunks.emplace(spec, chunk, getElementTypeOrSelf(g.getType()).isF16());
  }
  return deltaChunks->emit(b, loc, tiles, part, carried);
}

FailureOr<llvm::SmallVector<Value>>
DeltaRuleChunks::emit(OpBuilder &b, Location loc, const ChunkTiles &tiles,
                      Part part, Value carried) {
  using DeltaPart = Part;
  TileBuilder tb(b, loc);
  using IT = IteratorType;
  MLIRContext *ctx = b.getContext();
  auto input = [&](llvm::StringRef name) {
    return tiles.tokens[*spec.findInput(name)];
  };
  Value q = input("q"), k = input("k"), v = input("v"), g = input("g"),
        beta = input("beta");
  double scale = 1.0;
  if (std::optional<unsigned> p = spec.findParam("scale"))
    scale = spec.params[*p].value;
  int64_t dk = TileBuilder::shapeOf(k)[1];
  int64_t c = chunk;
  AffineExpr r, s, d;
  bindDims(ctx, r, s, d);
  auto map3 = [&](llvm::ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(3, 0, exprs, ctx);
  };
  auto cst = [](OpBuilder &nb, Location l, double value) -> Value {
    return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(value));
  };
  // Padding rows hold zeros: g = 0 and β = 0 make them identity maps.
  AffineMap id2 = b.getMultiDimIdentityMap(2);

  // The readout and the summary of a chunk share its WY/UT quantities
  // (built once per chunk: the fused loop asks for both).
  Chunk &parts = chunks[k];
  bool built = static_cast<bool>(parts.gamma);
  Value gamma = parts.gamma;

  // One (row, column, d) term of a band's sum over d: args are x[row, d],
  // k[col, d], Γ[row, d], Γ[col, d] and the sum so far.
  auto pairTerm = [](OpBuilder &nb, Location l, ValueRange args, Value row,
                     Value col, bool strict) -> Value {
    Value inside = arith::CmpIOp::create(
        nb, l, strict ? arith::CmpIPredicate::slt : arith::CmpIPredicate::sle,
        col, row);
    Value decay = math::ExpOp::create(
        nb, l, arith::SubFOp::create(nb, l, args[2], args[3]));
    Value term = arith::MulFOp::create(
        nb, l, arith::MulFOp::create(nb, l, args[0], args[1]), decay);
    Value add = arith::AddFOp::create(nb, l, args[4], term);
    return arith::SelectOp::create(nb, l, inside, add, args[4]);
  };
  // P(x)[r, s] = Σ_d x[r,d] k[s,d] e^{Γ[r,d] − Γ[s,d]} for s < r (s ≤ r
  // when not strict): the decay between two tokens of the chunk, never
  // e^{−Γ} alone (it would overflow). `band(x, w)` takes the exponential of
  // each difference inside the sum, for the pairs within blocks of w tokens:
  // band[r, j] = P[r, ρ(r) + j], ρ(r) the first token of r's block (w = c:
  // P itself, c² dk exponentials).
  auto band = [&](Value x, int64_t width, bool strict) -> Value {
    AffineExpr column = width == c ? s : r.floorDiv(width) * width + s;
    return tb.generic({x, k, gamma, gamma}, tb.zeros({c, width}),
                      {map3({r, d}), map3({column, d}), map3({r, d}),
                       map3({column, d}), map3({r, s})},
                      {IT::parallel, IT::parallel, IT::reduction},
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value row = linalg::IndexOp::create(nb, l, 0);
                        Value col = linalg::IndexOp::create(nb, l, 1);
                        if (width != c)
                          row = arith::RemUIOp::create(
                              nb, l, row,
                              arith::ConstantIndexOp::create(nb, l, width));
                        return pairTerm(nb, l, args, row, col, strict);
                      });
  };
  // The same band with every tile read through a projection of the loops
  // (what reverse differentiation takes): the tiles as [blocks, w, dk],
  // the loops (block, i, j, d), the band [blocks, w, w].
  auto projectedBand = [&](Value x, int64_t width, bool strict) -> Value {
    int64_t blocks = c / width;
    auto asBlocks = [&](Value tile) -> Value {
      return tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({blocks, width, dk}, b.getF32Type()),
          tile, llvm::ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    };
    AffineExpr blk, i, j, e;
    bindDims(ctx, blk, i, j, e);
    auto map4 = [&](llvm::ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(4, 0, exprs, ctx);
    };
    Value x4 = asBlocks(x), k4 = asBlocks(k), gamma4 = asBlocks(gamma);
    Value init = linalg::FillOp::create(b, loc, cst(b, loc, 0.0),
                                        tb.empty({blocks, width, width}))
                     .getResult(0);
    return tb.generic({x4, k4, gamma4, gamma4}, init,
                      {map4({blk, i, e}), map4({blk, j, e}), map4({blk, i, e}),
                       map4({blk, j, e}), map4({blk, i, j})},
                      {IT::parallel, IT::parallel, IT::parallel, IT::reduction},
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value row = linalg::IndexOp::create(nb, l, 1);
                        Value col = linalg::IndexOp::create(nb, l, 2);
                        return pairTerm(nb, l, args, row, col, strict);
                      });
  };
  // `pairs(x)` is P(x) in blocks of kPairBlock tokens. A pair of tokens in
  // different blocks factors through the first token ρ of the later block:
  // e^{Γ_r − Γ_s} = e^{Γ_r − Γ_ρ} · e^{Γ_ρ − Γ_s}, both factors ≤ 1 (Γ falls:
  // s < ρ ≤ r), so those pairs are a sum over the reference blocks of
  // contractions over d of token rows scaled toward and from each
  // reference (on tensor cores where the chunk's products are; a sum of
  // products, not one product of the blocks side by side, so that each
  // operand is a whole chunk tile). Pairs within one block are the band:
  // c · kPairBlock · dk exponentials in place of c² dk.
  auto pairs = [&](Value x, bool strict) -> Value {
    int64_t block = kPairBlock;
    if (!pairBlocks || c <= block || c % block)
      return band(x, c, strict);
    int64_t blocks = c / block;
    Value inBlocks = projectionsOnly ? projectedBand(x, block, strict)
                                     : band(x, block, strict);
    AffineMap cols = AffineMap::get(2, 0, {b.getAffineDimExpr(1)}, ctx);
    // x e^{Γ − Γ_ρ} (towardRef) or x e^{Γ_ρ − Γ} where lo <= row < hi, 0
    // elsewhere (the exponential there may overflow and is not used); ρ the
    // first token of block `ref`.
    auto scaled = [&](Value rows, int64_t ref, bool towardRef, int64_t lo,
                      int64_t hi) -> Value {
      Value first = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({dk}, b.getF32Type()), gamma,
          llvm::ArrayRef<OpFoldResult>{idx(b, ref * block), idx(b, 0)},
          llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, dk)},
          llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
      Value piece = tb.generic(
          {rows, gamma, first}, tb.empty({c, dk}), {id2, id2, cols, id2},
          {IT::parallel, IT::parallel},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            Value row = linalg::IndexOp::create(nb, l, 0);
            auto bound = [&](arith::CmpIPredicate p, int64_t v) {
              return arith::CmpIOp::create(
                  nb, l, p, row, arith::ConstantIndexOp::create(nb, l, v));
            };
            Value used = arith::AndIOp::create(
                nb, l, bound(arith::CmpIPredicate::sge, lo),
                bound(arith::CmpIPredicate::slt, hi));
            Value exponent =
                towardRef ? arith::SubFOp::create(nb, l, args[1], args[2])
                          : arith::SubFOp::create(nb, l, args[2], args[1]);
            Value value = arith::MulFOp::create(
                nb, l, args[0], math::ExpOp::create(nb, l, exponent));
            return arith::SelectOp::create(nb, l, used, value, cst(nb, l, 0.0));
          });
      return piece;
    };
    // Reference block `ref` (= 1 .. blocks − 1): rows of block `ref` toward
    // it, rows before it from it.
    if (parts.keysFrom.empty())
      for (int64_t ref = 1; ref < blocks; ++ref)
        parts.keysFrom.push_back(
            scaled(k, ref, /*towardRef=*/false, 0, ref * block));
    Value across;
    for (int64_t ref = 1; ref < blocks; ++ref) {
      Value toward =
          scaled(x, ref, /*towardRef=*/true, ref * block, (ref + 1) * block);
      Value product = tb.matmul(toward, parts.keysFrom[ref - 1],
                                /*transA=*/false, /*transB=*/true);
      across = across ? tb.add(across, product) : product;
    }
    // P: the band where both tokens share a block, else the contraction
    // (which is 0 there).
    if (projectionsOnly) {
      // As [blocks, w, blocks, w]: the band read at (b₁, i, j).
      AffineExpr b1, i, b2, j;
      bindDims(ctx, b1, i, b2, j);
      auto map4 = [&](llvm::ArrayRef<AffineExpr> exprs) {
        return AffineMap::get(4, 0, exprs, ctx);
      };
      llvm::SmallVector<ReassociationIndices> split = {{0, 1}, {2, 3}};
      auto type4 =
          RankedTensorType::get({blocks, block, blocks, block}, b.getF32Type());
      Value across4 =
          tensor::ExpandShapeOp::create(b, loc, type4, across, split);
      Value joined = tb.generic(
          {inBlocks, across4}, tb.empty({blocks, block, blocks, block}),
          {map4({b1, i, j}), map4({b1, i, b2, j}), map4({b1, i, b2, j})},
          {IT::parallel, IT::parallel, IT::parallel, IT::parallel},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            Value same =
                arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                      linalg::IndexOp::create(nb, l, 0),
                                      linalg::IndexOp::create(nb, l, 2));
            return arith::SelectOp::create(nb, l, same, args[0], args[1]);
          });
      return tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({c, c}, b.getF32Type()), joined, split);
    }
    AffineMap bandAt = AffineMap::get(
        2, 0, {b.getAffineDimExpr(0), b.getAffineDimExpr(1) % block}, ctx);
    return tb.generic(
        {inBlocks, across}, tb.empty({c, c}), {bandAt, id2, id2},
        {IT::parallel, IT::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value col = linalg::IndexOp::create(nb, l, 1);
          Value size = arith::ConstantIndexOp::create(nb, l, block);
          Value same =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                    arith::DivUIOp::create(nb, l, row, size),
                                    arith::DivUIOp::create(nb, l, col, size));
          return arith::SelectOp::create(nb, l, same, args[0], args[1]);
        });
  };
  if (!built) {
    // Γ[r] = Σ_{s ≤ r} g[s]: the in-chunk cumulative log-decay per channel.
    // Each g is raised to at least kLogDecayFloor first: a decay to exactly
    // zero (g = −inf) would make every later Γ −inf and Γ_r − Γ_s = NaN;
    // e^{kLogDecayFloor} is so far below f32's rounding that the earlier
    // state's share is lost exactly as with 0, while the differences of
    // later tokens' Γ keep their precision. NaN stays NaN (maximumf).
    //
    // Given g in bf16 (or f32, whose chunks the GPU keeps off its tensor
    // cores), Γ is a contraction with the lower-triangular ones: its
    // operands are exact in the tensor cores' bf16 (the floor, −64, too),
    // their products and f32 sums those of the masked sum (KDA 4x16x4096
    // bf16 on an H100: 3.60 -> 3.16 ms). An f16 g has three bits more than
    // bf16 holds and keeps the masked sum.
    if (!f16Gates) {
      Value clamped = tb.generic(
          {g}, tb.empty({c, dk}), {id2, id2}, {IT::parallel, IT::parallel},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            return arith::MaximumFOp::create(nb, l, args[0],
                                             cst(nb, l, kLogDecayFloor));
          });
      Value lowerOnes =
          tb.generic({}, tb.empty({c, c}), {id2}, {IT::parallel, IT::parallel},
                     [&](OpBuilder &nb, Location l, ValueRange) -> Value {
                       Value row = linalg::IndexOp::create(nb, l, 0);
                       Value col = linalg::IndexOp::create(nb, l, 1);
                       Value inside = arith::CmpIOp::create(
                           nb, l, arith::CmpIPredicate::sle, col, row);
                       return arith::SelectOp::create(
                           nb, l, inside, cst(nb, l, 1.0), cst(nb, l, 0.0));
                     });
      gamma = tb.matmul(lowerOnes, clamped);
    } else {
      gamma = tb.generic(
          {g}, tb.zeros({c, dk}), {map3({s, d}), map3({r, d})},
          {IT::parallel, IT::reduction, IT::parallel},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            Value row = linalg::IndexOp::create(nb, l, 0);
            Value col = linalg::IndexOp::create(nb, l, 1);
            Value inside = arith::CmpIOp::create(
                nb, l, arith::CmpIPredicate::sle, col, row);
            Value logDecay = arith::MaximumFOp::create(
                nb, l, args[0], cst(nb, l, kLogDecayFloor));
            Value add = arith::AddFOp::create(nb, l, args[1], logDecay);
            return arith::SelectOp::create(nb, l, inside, add, args[1]);
          });
    }

    Value lower = tb.scaleRows(pairs(k, /*strict=*/true), beta);

    // T = (I + L)^-1 diag(β). N = (I + L)^-1 by doubling its diagonal
    // blocks: where N is block-diagonal in aligned blocks of s rows, each
    // the inverse of I + L's block there, the inverse for blocks of 2s is
    // N − N L' N, L' the lower-left s x s block of L in each 2s block
    // ([[N₁₁, 0], [−N₂₂ L₂₁ N₁₁, N₂₂]]). log₂ c levels of products, each
    // parallel over the chunk, in place of c dependent rows of forward
    // substitution; N's entries are the inverse's own at every level (no
    // cancelling powers of L, as a Neumann product would have).
    auto blockMask = [&](Value x, int64_t half) -> Value {
      return tb.generic(
          {x}, tb.empty({c, c}), {id2, id2}, {IT::parallel, IT::parallel},
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            Value row = linalg::IndexOp::create(nb, l, 0);
            Value col = linalg::IndexOp::create(nb, l, 1);
            Value span = arith::ConstantIndexOp::create(nb, l, 2 * half);
            Value h = arith::ConstantIndexOp::create(nb, l, half);
            auto cmp = [&](arith::CmpIPredicate p, Value a, Value b2) {
              return arith::CmpIOp::create(nb, l, p, a, b2);
            };
            Value same = cmp(arith::CmpIPredicate::eq,
                             arith::DivUIOp::create(nb, l, row, span),
                             arith::DivUIOp::create(nb, l, col, span));
            Value lowerHalf = cmp(arith::CmpIPredicate::uge,
                                  arith::RemUIOp::create(nb, l, row, span), h);
            Value upperHalf = cmp(arith::CmpIPredicate::ult,
                                  arith::RemUIOp::create(nb, l, col, span), h);
            Value inside = arith::AndIOp::create(
                nb, l, same,
                arith::AndIOp::create(nb, l, lowerHalf, upperHalf));
            return arith::SelectOp::create(nb, l, inside, args[0],
                                           cst(nb, l, 0.0));
          });
    };
    // From the identity (M's, the monoid's own, c x c).
    OpRecorder solveOps(b);
    Value inverse =
        buildMonoidIdentity(b, loc, spec, *spec.findComponent("M"),
                            RankedTensorType::get({c, c}, b.getF32Type()));
    for (int64_t half = 1; half < c; half *= 2) {
      Value cross =
          tb.matmul(inverse, tb.matmul(blockMask(lower, half), inverse));
      inverse =
          tb.generic({inverse, cross}, tb.empty({c, c}), {id2, id2, id2},
                     {IT::parallel, IT::parallel},
                     [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                       return arith::SubFOp::create(nb, l, args[0], args[1]);
                     });
    }
    // Reversed, N = (I + L)^-1 gives L the cotangent −Nᵀ dN Nᵀ: two
    // products, where reversing the doubling takes about four per level and
    // keeps every level's N.
    solveVjps.push_back(
        {lower, inverse, solveOps.recorded(),
         [inverse](OpBuilder &nb, Location l, Value cotangent) -> Value {
           TileBuilder rb(nb, l);
           Value left = rb.matmul(inverse, cotangent, /*transA=*/true);
           return rb.scale(
               rb.matmul(left, inverse, /*transA=*/false, /*transB=*/true),
               -1.0);
         }});
    Value tri = tb.scaleCols(inverse, beta);

    Value expGamma = tb.generic(
        {gamma}, tb.empty({c, dk}), {id2, id2}, {IT::parallel, IT::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return math::ExpOp::create(nb, l, args[0]);
        });
    parts.w = tb.matmul(tri, tb.mul(expGamma, k)); // W = T (e^Γ ⊙ K)
    parts.u = tb.matmul(tri, v);                   // U = T V
    parts.expGamma = expGamma;
    parts.gamma = gamma;
  }
  Value expGamma = parts.expGamma, w = parts.w, u = parts.u;

  // U − W S, the rows' and the next state's (made once per state).
  auto deltaOf = [&](Value state) -> Value {
    if (parts.deltaState == state)
      return parts.delta;
    parts.delta =
        tb.generic({u, tb.matmul(w, state)}, tb.empty(TileBuilder::shapeOf(u)),
                   {id2, id2, id2}, {IT::parallel, IT::parallel},
                   [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                     return arith::SubFOp::create(nb, l, args[0], args[1]);
                   });
    parts.deltaState = state;
    return parts.delta;
  };
  // Γ_last and K̃[s] = e^{Γ_last − Γ[s]} ⊙ k[s]: the keys decayed to the
  // chunk's end.
  Value last;
  if (part != DeltaPart::Rows)
    last = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({dk}, b.getF32Type()), gamma,
        llvm::ArrayRef<OpFoldResult>{idx(b, c - 1), idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, dk)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
  AffineMap rows = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx);
  auto keysToEnd = [&]() -> Value {
    AffineMap cols = AffineMap::get(2, 0, {b.getAffineDimExpr(1)}, ctx);
    return tb.generic({last, gamma, k}, tb.empty({c, dk}),
                      {cols, id2, id2, id2}, {IT::parallel, IT::parallel},
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value decay = math::ExpOp::create(
                            nb, l,
                            arith::SubFOp::create(nb, l, args[0], args[1]));
                        return arith::MulFOp::create(nb, l, decay, args[2]);
                      });
  };

  if (part == DeltaPart::NextState) {
    // S' = A S + B = Diag(e^{Γ_last}) S + K̃ᵀ (U − W S).
    Value decayed =
        tb.generic({last, carried}, tb.empty(TileBuilder::shapeOf(carried)),
                   {rows, id2, id2}, {IT::parallel, IT::parallel},
                   [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                     return arith::MulFOp::create(
                         nb, l, math::ExpOp::create(nb, l, args[0]), args[1]);
                   });
    Value update = tb.matmul(keysToEnd(), deltaOf(carried), /*transA=*/true);
    llvm::SmallVector<Value> next = {tb.add(decayed, update)};
    return next;
  }
  if (part == DeltaPart::Map) {
    // The chunk's map S ↦ A S + B: A = Diag(e^{Γ_last}) − K̃ᵀ W,
    // B = K̃ᵀ U.
    Value kTilde = keysToEnd();
    Value kw = tb.matmul(kTilde, w, /*transA=*/true);
    Value a =
        tb.generic({last, kw}, tb.empty({dk, dk}), {rows, id2, id2},
                   {IT::parallel, IT::parallel},
                   [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                     Value i = linalg::IndexOp::create(nb, l, 0);
                     Value j = linalg::IndexOp::create(nb, l, 1);
                     Value diag = arith::CmpIOp::create(
                         nb, l, arith::CmpIPredicate::eq, i, j);
                     Value decay = arith::SelectOp::create(
                         nb, l, diag, math::ExpOp::create(nb, l, args[0]),
                         cst(nb, l, 0.0));
                     return arith::SubFOp::create(nb, l, decay, args[1]);
                   });
    Value bMap = tb.matmul(kTilde, u, /*transA=*/true);
    llvm::SmallVector<Value> values(spec.components.size());
    values[*spec.findComponent("M")] = a;
    values[*spec.findComponent("S")] = bMap;
    return values;
  }
  // O = s (e^Γ ⊙ Q) S + A_qk (U − W S), A_qk = s P(Q, K) (s ≤ r).
  Value qs = tb.scale(tb.mul(expGamma, q), scale);
  Value attn = tb.scale(pairs(q, /*strict=*/false), scale);
  Value rowsOut =
      tb.add(tb.matmul(qs, carried), tb.matmul(attn, deltaOf(carried)));
  return llvm::SmallVector<Value>{rowsOut};
}

} // namespace mlir::hla::chunk
