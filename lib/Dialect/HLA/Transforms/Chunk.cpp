//===- Chunk.cpp - The chunked form of prefix-moment scans --------*- C++ -*-===//
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
//===----------------------------------------------------------------------===//

#include "TileBuilder.h"

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/ChunkPlan.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/MapVector.h"

#include <cmath>
#include <limits>
#include <map>

#define DEBUG_TYPE "hla-chunk"

namespace mlir::hla {
#define GEN_PASS_DEF_HLACHUNKPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;
using utils::IteratorType;

namespace {

//===----------------------------------------------------------------------===//
// Decay tiles
//===----------------------------------------------------------------------===//

/// The constant tiles of a plan (decay-weighted triangular masks and
/// from-start weights), built once before the chunk loops.
class DecayTiles {
public:
  DecayTiles(OpBuilder &hoist, Location loc, int64_t chunk, double gamma)
      : tb(hoist, loc), chunk(chunk), logGamma(std::log(gamma)) {}

  /// M[p][v] = γ^{w (p − v)} for v ≤ p (v < p when strict), else 0.
  Value mask(double w, bool strict) {
    auto key = std::make_pair(w, strict);
    auto it = masks.find(key);
    if (it != masks.end())
      return it->second;
    OpBuilder &b = tb.getBuilder();
    MLIRContext *ctx = b.getContext();
    AffineMap id = b.getMultiDimIdentityMap(2);
    double rate = w * logGamma;
    Value result = tb.generic(
        {}, tb.empty({chunk, chunk}), {id},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange) -> Value {
          Value p = linalg::IndexOp::create(nb, l, 0);
          Value v = linalg::IndexOp::create(nb, l, 1);
          Value diff = arith::SubIOp::create(nb, l, p, v);
          Value zero = arith::ConstantIndexOp::create(nb, l, 0);
          Value inside = arith::CmpIOp::create(
              nb, l, strict ? arith::CmpIPredicate::sgt
                            : arith::CmpIPredicate::sge,
              diff, zero);
          Value weight = decayOf(nb, l, diff, rate);
          Value zeroF = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
          return arith::SelectOp::create(nb, l, inside, weight, zeroF);
        });
    (void)ctx;
    masks[key] = result;
    return result;
  }

  /// u[v] = γ^{w (v + 1)}.
  Value fromStart(double w) {
    auto it = starts.find(w);
    if (it != starts.end())
      return it->second;
    OpBuilder &b = tb.getBuilder();
    AffineMap id = b.getMultiDimIdentityMap(1);
    double rate = w * logGamma;
    Value result = tb.generic(
        {}, tb.empty({chunk}), {id}, {IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange) -> Value {
          Value v = linalg::IndexOp::create(nb, l, 0);
          Value one = arith::ConstantIndexOp::create(nb, l, 1);
          return decayOf(nb, l, arith::AddIOp::create(nb, l, v, one), rate);
        });
    starts[w] = result;
    return result;
  }

  /// exp(rate · n) for an index n.
  static Value decayOf(OpBuilder &b, Location l, Value n, double rate) {
    Value asInt = arith::IndexCastOp::create(b, l, b.getI64Type(), n);
    Value asFloat = arith::SIToFPOp::create(b, l, b.getF32Type(), asInt);
    Value scaled = arith::MulFOp::create(
        b, l, asFloat, arith::ConstantOp::create(b, l, b.getF32FloatAttr(rate)));
    return math::ExpOp::create(b, l, scaled);
  }

  double getLogGamma() const { return logGamma; }

private:
  TileBuilder tb;
  int64_t chunk;
  double logGamma;
  std::map<std::pair<double, bool>, Value> masks;
  std::map<double, Value> starts;
};

//===----------------------------------------------------------------------===//
// Term emission
//===----------------------------------------------------------------------===//

/// Everything a term needs inside the chunk loop.
struct ChunkTiles {
  int64_t chunk = 0;
  /// Per monoid input: the chunk's tile [c, n] (or [c] for scalars), f32.
  llvm::SmallVector<Value> tokens;
  /// Per component: the carried-in state (phase 3), f32, or null.
  llvm::SmallVector<Value> carried;
  /// The chunk's number of valid tokens (index).
  Value length;
  /// Batch entry, first token and query head of the chunk (index).
  Value batch, start, head;
  /// The chunk's sequence (its row of per-sequence states) and that
  /// sequence's first token; null: the batch entry and token 0.
  Value sequence, sequenceStart;
};

/// The tensor network of one term while its indices are summed out.
class TermNetwork {
public:
  TermNetwork(TileBuilder &tb) : tb(tb) {}

  void addPair(int a, int b, Value tile) {
    if (a > b) {
      std::swap(a, b);
      tile = tb.transpose(tile);
    }
    auto key = std::make_pair(a, b);
    auto it = pairs.find(key);
    pairs[key] = it == pairs.end() ? tile : tb.mul(it->second, tile);
  }
  /// The pairwise factor between a and b as a tile indexed [a][b].
  Value getPair(int a, int b) {
    if (a < b)
      return pairs.at({a, b});
    return tb.transpose(pairs.at({b, a}));
  }
  bool hasPair(int a, int b) {
    return pairs.count({std::min(a, b), std::max(a, b)});
  }
  void addUnary(int v, Value vec) {
    auto it = unary.find(v);
    unary[v] = it == unary.end() ? vec : tb.mul(it->second, vec);
  }
  Value getUnary(int v) {
    auto it = unary.find(v);
    return it == unary.end() ? Value() : it->second;
  }
  void addScalar(Value s) { scalars.push_back(s); }

  llvm::SmallVector<int> neighbors(int x) {
    llvm::SmallVector<int> result;
    for (auto &[key, tile] : pairs) {
      if (key.first == x)
        result.push_back(key.second);
      else if (key.second == x)
        result.push_back(key.first);
    }
    return result;
  }

  /// Sums out `x`. Fails if x touches more than two other indices (the
  /// result would be a three-index tensor).
  LogicalResult eliminate(int x, int64_t chunk) {
    llvm::SmallVector<int> n = neighbors(x);
    Value u = getUnary(x);
    if (n.size() > 2)
      return failure();
    if (n.empty()) {
      scalars.push_back(u ? tb.sum(u) : Value());
      if (!u)
        count *= chunk;
    } else if (n.size() == 1) {
      Value p = getPair(n[0], x);
      Value vec = u ? tb.matvec(p, u) : tb.matvec(p, ones(chunk));
      addUnary(n[0], vec);
    } else {
      Value a = getPair(n[0], x);
      if (u)
        a = tb.scaleCols(a, u);
      Value product = tb.matmul(a, getPair(x, n[1]));
      erase(x);
      addPair(n[0], n[1], product);
      return success();
    }
    erase(x);
    return success();
  }

  Value ones(int64_t chunk) {
    if (!onesTile) {
      OpBuilder &b = tb.getBuilder();
      onesTile = linalg::FillOp::create(b, tb.getLoc(), tb.scalar(1.0),
                                        tb.empty({chunk}))
                     .getResult(0);
    }
    return onesTile;
  }

  /// Multiplies `v` by every scalar and the count.
  Value applyScalars(Value v, double coeff) {
    for (Value s : scalars)
      if (s)
        v = tb.scaleBy(v, s);
    return tb.scale(v, coeff * count);
  }

private:
  void erase(int x) {
    for (auto it = pairs.begin(); it != pairs.end();) {
      if (it->first.first == x || it->first.second == x)
        it = pairs.erase(it);
      else
        ++it;
    }
    unary.erase(x);
  }

  TileBuilder &tb;
  std::map<std::pair<int, int>, Value> pairs;
  std::map<int, Value> unary;
  llvm::SmallVector<Value> scalars;
  double count = 1.0;
  Value onesTile;
};

/// Emits index terms as linalg ops on chunk tiles.
class TermEmitter {
public:
  TermEmitter(TileBuilder &tb, const MonoidSpec &spec, const ChunkTiles &tiles,
              DecayTiles &decay)
      : tb(tb), spec(spec), tiles(tiles), decay(decay) {}

  /// The value of a summary term (component shape) or a readout term
  /// ([c, n] or [c]).
  FailureOr<Value> emit(const IndexTerm &term, bool isSummary,
                        std::string &error);

private:
  Value tokenTile(const ChainFactor &f) { return tiles.tokens[f.slot]; }
  Value carriedTile(const ChainFactor &f) { return tiles.carried[f.slot]; }
  Value endWeights(double w, bool strict);
  Value startScalar(double w);

  TileBuilder &tb;
  const MonoidSpec &spec;
  const ChunkTiles &tiles;
  DecayTiles &decay;
};

Value TermEmitter::endWeights(double w, bool strict) {
  // e[v] = γ^{w (E − v)} for v ≤ E (v < E when strict), E = length − 1.
  OpBuilder &b = tb.getBuilder();
  AffineMap id = b.getMultiDimIdentityMap(1);
  double rate = w * decay.getLogGamma();
  Value length = tiles.length;
  return tb.generic(
      {}, tb.empty({tiles.chunk}), {id}, {IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value v = linalg::IndexOp::create(nb, l, 0);
        Value one = arith::ConstantIndexOp::create(nb, l, 1);
        Value last = arith::SubIOp::create(nb, l, length, one);
        Value diff = arith::SubIOp::create(nb, l, last, v);
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        Value inside = arith::CmpIOp::create(
            nb, l, strict ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::sge,
            diff, zero);
        Value weight = DecayTiles::decayOf(nb, l, diff, rate);
        Value zeroF = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
        return arith::SelectOp::create(nb, l, inside, weight, zeroF);
      });
}

Value TermEmitter::startScalar(double w) {
  // γ^{w (E + 1)} = γ^{w · length}, as a 0-d tensor.
  OpBuilder &b = tb.getBuilder();
  Location l = tb.getLoc();
  Value weight = DecayTiles::decayOf(b, l, tiles.length,
                                     w * decay.getLogGamma());
  return tensor::FromElementsOp::create(
      b, l, RankedTensorType::get({}, b.getF32Type()), ValueRange{weight});
}

FailureOr<Value> TermEmitter::emit(const IndexTerm &term, bool isSummary,
                                   std::string &error) {
  std::vector<ChainFactor> scalarFactors;
  FailureOr<std::vector<ChainPiece>> pieces =
      splitChain(spec, term, scalarFactors, error);
  if (failed(pieces))
    return failure();
  FailureOr<DecayPlan> decayPlan = planDecay(term, error);
  if (failed(decayPlan))
    return failure();

  int64_t c = tiles.chunk;
  TermNetwork net(tb);
  // The output's ends: the left column (summaries) and the right row.
  const ChainPiece *left = nullptr, *right = nullptr;
  Value leftTile, rightTile; // [c, n] when the end is at a token, else [n]

  for (const ChainPiece &piece : *pieces) {
    const std::vector<ChainFactor> &fs = piece.factors;
    switch (piece.kind) {
    case ChainPiece::Kind::Scalar: {
      const ChainFactor &first = fs.front(), &last = fs.back();
      size_t middleEnd = fs.size() - 1;
      if (piece.firstVar >= 0) {
        // Rows of X · M… indexed by the first token.
        Value x = tokenTile(first);
        for (size_t i = 1; i < middleEnd; ++i)
          x = tb.matmul(x, carriedTile(fs[i]), false, fs[i].transposed);
        if (piece.lastVar >= 0) {
          Value y = tokenTile(last);
          if (piece.firstVar == piece.lastVar)
            net.addUnary(piece.firstVar, tb.dotRows(x, y));
          else
            net.addPair(piece.firstVar, piece.lastVar,
                        tb.matmul(x, y, false, true));
        } else {
          net.addUnary(piece.firstVar, tb.matvec(x, carriedTile(last)));
        }
      } else {
        // A constant row r₀ᵀ M…: keep it as the vector (M…)ᵀ r₀.
        Value r = carriedTile(first);
        for (size_t i = 1; i < middleEnd; ++i)
          r = tb.matvec(carriedTile(fs[i]), r, !fs[i].transposed);
        if (piece.lastVar >= 0)
          net.addUnary(piece.lastVar, tb.matvec(tokenTile(last), r));
        else
          net.addScalar(tb.dot(r, carriedTile(last)));
      }
      break;
    }
    case ChainPiece::Kind::Left: {
      left = &piece;
      if (piece.lastVar >= 0) {
        // L[l] = M… x_l, kept as rows X · (M…)ᵀ.
        Value l = tokenTile(fs.back());
        for (size_t i = fs.size() - 1; i-- > 0;)
          l = tb.matmul(l, carriedTile(fs[i]), false, !fs[i].transposed);
        leftTile = l;
      } else {
        Value v = carriedTile(fs.back());
        for (size_t i = fs.size() - 1; i-- > 0;)
          v = tb.matvec(carriedTile(fs[i]), v, fs[i].transposed);
        leftTile = v;
      }
      break;
    }
    case ChainPiece::Kind::Right: {
      right = &piece;
      if (piece.firstVar >= 0) {
        Value r = tokenTile(fs.front());
        for (size_t i = 1; i < fs.size(); ++i)
          r = tb.matmul(r, carriedTile(fs[i]), false, fs[i].transposed);
        rightTile = r;
      } else {
        if (!(fs.front().transposed &&
              spec.components[fs.front().slot].getRank() == 1)) {
          error = "a chain of carried matrices without a token";
          return failure();
        }
        Value r = carriedTile(fs.front());
        for (size_t i = 1; i < fs.size(); ++i)
          r = tb.matvec(carriedTile(fs[i]), r, !fs[i].transposed);
        rightTile = r;
      }
      break;
    }
    }
  }

  // Scalars: token scalars weigh their index, carried scalars are constants.
  for (const ChainFactor &f : scalarFactors) {
    if (f.kind == ChainFactor::Kind::Token)
      net.addUnary(f.var, tokenTile(f));
    else
      net.addScalar(carriedTile(f));
  }

  // The index tree with its decay: masks between indices, weights from the
  // chunk's start, and (summaries) weights to the chunk's end.
  for (size_t v = 1; v < term.vars.size(); ++v) {
    int p = term.vars[v].parent;
    bool strict = term.vars[v].strict;
    double w = decayPlan->edge[v];
    if (isSummary && p == 0)
      net.addUnary(v, endWeights(w, strict));
    else
      net.addPair(p, v, decay.mask(w, strict));
  }
  for (size_t v = 0; v < term.vars.size(); ++v) {
    double u = decayPlan->fromStart[v];
    if (u == 0.0)
      continue;
    if (isSummary && v == 0)
      net.addScalar(startScalar(u));
    else
      net.addUnary(v, decay.fromStart(u));
  }
  double coeff = term.coeff *
                 std::exp(decayPlan->constant * decay.getLogGamma());

  // Sum out every index but the output's.
  llvm::SmallVector<int> keep;
  int leftVar = left ? left->lastVar : -1;
  int rightVar = right ? right->firstVar : -1;
  if (!isSummary)
    keep.push_back(0);
  if (leftVar >= 0)
    keep.push_back(leftVar);
  if (rightVar >= 0)
    keep.push_back(rightVar);
  llvm::SmallVector<int> internal;
  for (size_t v = isSummary ? 1 : 0; v < term.vars.size(); ++v)
    if (!llvm::is_contained(keep, int(v)))
      internal.push_back(v);
  while (!internal.empty()) {
    // The index with the fewest neighbours first.
    auto best = llvm::min_element(internal, [&](int a, int b) {
      return net.neighbors(a).size() < net.neighbors(b).size();
    });
    if (failed(net.eliminate(*best, c))) {
      error = "an index of the term touches three others; its chunked form "
              "would need a three-index intermediate";
      return failure();
    }
    internal.erase(best);
  }

  auto unaryOrOnes = [&](int v) {
    Value u = net.getUnary(v);
    return u ? u : net.ones(c);
  };

  Value result;
  if (!isSummary) {
    Value ut = net.getUnary(0);
    if (!right) {
      result = unaryOrOnes(0);
    } else if (rightVar == 0) {
      result = ut ? tb.scaleRows(rightTile, ut) : rightTile;
    } else if (rightVar < 0) {
      result = tb.outer(unaryOrOnes(0), rightTile);
    } else if (net.hasPair(0, rightVar)) {
      Value w = net.getPair(0, rightVar);
      if (Value ur = net.getUnary(rightVar))
        w = tb.scaleCols(w, ur);
      result = tb.matmul(w, rightTile);
      if (ut)
        result = tb.scaleRows(result, ut);
    } else {
      Value sumRight = tb.matvec(rightTile, unaryOrOnes(rightVar), true);
      result = tb.outer(unaryOrOnes(0), sumRight);
    }
    return net.applyScalars(result, coeff);
  }

  // Summaries: Lᵀ · (weights between l and r) · R.
  if (!left && !right) {
    // No chain at all: the value is the product of the scalars.
    result = linalg::FillOp::create(tb.getBuilder(), tb.getLoc(),
                                    tb.scalar(1.0), tb.empty({}))
                 .getResult(0);
    return net.applyScalars(result, coeff);
  }
  if (!left) {
    error = "a summary chain that does not start with a column";
    return failure();
  }
  Value leftSum, rightSum;
  if (leftVar >= 0 && rightVar >= 0 && leftVar == rightVar) {
    Value l = tb.scaleRows(leftTile, unaryOrOnes(leftVar));
    result = tb.matmul(l, rightTile, true, false);
  } else if (leftVar >= 0 && rightVar >= 0 && net.hasPair(leftVar, rightVar)) {
    Value w = net.getPair(leftVar, rightVar);
    if (Value ul = net.getUnary(leftVar))
      w = tb.scaleRows(w, ul);
    if (Value ur = net.getUnary(rightVar))
      w = tb.scaleCols(w, ur);
    result = tb.matmul(leftTile, tb.matmul(w, rightTile), true, false);
  } else {
    leftSum = leftVar >= 0 ? tb.matvec(leftTile, unaryOrOnes(leftVar), true)
                           : leftTile;
    if (!right) {
      result = leftSum;
    } else {
      rightSum = rightVar >= 0
                     ? tb.matvec(rightTile, unaryOrOnes(rightVar), true)
                     : rightTile;
      result = tb.outer(leftSum, rightSum);
    }
  }
  return net.applyScalars(result, coeff);
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

/// Static sizes of a matched segment -> scan -> readout chain. The readout
/// is an hla.readout or LinSimp's hla.anchor_readout (`anchor`).
struct ChainInfo {
  SegmentOp segment;
  ScanOp scan;
  Operation *readout = nullptr;
  AnchorReadoutOp anchor;
  int64_t batch = 0, length = 0, heads = 0;

  RankedTensorType outputType() const {
    return cast<RankedTensorType>(readout->getResult(0).getType());
  }
};

static OpFoldResult idx(OpBuilder &b, int64_t v) { return b.getIndexAttr(v); }

class ChunkRewriter {
public:
  ChunkRewriter(ChainInfo info, int64_t chunk, const ChunkPlan &plan)
      : info(info), spec(info.scan.getMonoid().getSpec()), chunk(chunk),
        plan(plan) {}

  /// Features on the anchor side shifted by one running maximum per query
  /// (cancels in LinSimp's joint normalisation; off only to test that).
  bool stableFeatures = true;
  /// The gated delta rule (KDA): its matrix-valued transition has no index
  /// plan; chunks are summarised and read out in the WY/UT form instead.
  bool deltaRule = false;
  /// Rows before a chunk's first non-finite token are read out again
  /// without the tokens from there on (see `emitCausalRows`).
  bool causalIsolation = true;

private:
  /// KDA: a chunk's cumulative log-decay Γ, e^Γ, W and U (per key tile).
  struct DeltaChunk {
    Value gamma, expGamma, w, u;
  };
  llvm::DenseMap<Value, DeltaChunk> deltaChunks;

public:

  /// The three-phase form (summaries, scan over chunks, readouts).
  LogicalResult rewritePhased(std::string &error);
  /// One loop over a sequence's chunks per (sequence, head), carrying the
  /// state from chunk to chunk.
  LogicalResult rewriteFused(std::string &error);
  /// The sequence cut into `segments` runs of chunks: one loop per
  /// (batch entry, segment, head) folds each segment's chunks into its
  /// summary, then one loop per (batch entry, segment, head) combines the
  /// summaries of the segments before it and reads its chunks out.
  LogicalResult rewriteSegmented(int64_t segments, std::string &error);

private:
  /// Shapes, chunk counts and the token operands of every input.
  void prepareShapes();
  /// The constant tiles (at `hoist`) and, packed, the slot table (at `b`).
  void prepareTiles(OpBuilder &b, OpBuilder &hoist, Location loc);
  /// Builds the slot table of packed sequences: per chunk slot its start
  /// token and length (0 for unused slots), and per sequence the offset of
  /// its first slot (N + 1 entries, the last one the number of used slots).
  /// Checks at run time that the offsets run from 0 to T without decreasing.
  std::tuple<Value, Value, Value, Value> buildChunkTable(OpBuilder &b,
                                                         Location loc,
                                                  Value cuSeqlens,
                                                  int64_t sequences,
                                                  int64_t slots);
  /// Loads the chunk's tile of token input `input` (zero beyond `length`).
  Value loadTile(OpBuilder &b, Location loc, unsigned input, Value operand,
                 Value batch, Value start, Value length, Value head);
  /// (start token, valid length) of chunk slot `n`.
  std::pair<Value, Value> chunkBounds(OpBuilder &b, Location loc, Value n);
  /// Loads the tiles of `inputs` for the chunk at `start`.
  void loadTokens(OpBuilder &b, Location loc, ChunkTiles &tiles, Value batch,
                  Value start, Value head, llvm::ArrayRef<unsigned> inputs);
  /// The token inputs the terms of `outputs` read.
  llvm::SmallVector<unsigned>
  usedInputs(llvm::ArrayRef<PlannedOutput> outputs) const;
  /// Sums the terms of one planned output.
  FailureOr<Value> emitOutput(TileBuilder &tb, const PlannedOutput &out,
                              const ChunkTiles &tiles, bool isSummary,
                              llvm::ArrayRef<int64_t> shape,
                              std::string &error);
  /// Every component's chunk summary (decay components: γ^length).
  FailureOr<llvm::SmallVector<Value>>
  emitSummaries(OpBuilder &b, Location loc, const ChunkTiles &tiles,
                std::string &error);
  /// The readout rows of the chunk, [c, width] in the output's element
  /// type (rows beyond the chunk's length are garbage).
  FailureOr<Value> emitReadoutRows(OpBuilder &b, Location loc,
                                   const ChunkTiles &tiles,
                                   std::string &error);
  /// The readout rows of the chunk with causal isolation: where a token
  /// at chunk position f < length holds a non-finite value, rows [0, f)
  /// come from the chunk read out as f tokens (the later ones zeroed), as
  /// the masked products would otherwise carry 0 · NaN into them.
  FailureOr<Value> emitCausalRows(OpBuilder &b, Location loc,
                                  const ChunkTiles &tiles,
                                  std::string &error);
  /// The first row of any of the [c, n] or [c] f32 `tiles` holding a
  /// non-finite value, or c when there is none (index).
  Value firstNonFiniteRow(OpBuilder &b, Location loc,
                          llvm::ArrayRef<Value> tiles);
  /// KDA (SEMANTICS.md §6): the chunk's affine map (A, B) when
  /// `carried` is null, else its output rows read from the state `carried`.
  FailureOr<llvm::SmallVector<Value>> emitDeltaRule(OpBuilder &b,
                                                    Location loc,
                                                    const ChunkTiles &tiles,
                                                    Value carried);
  /// LinSimp: the rows of the chunk, summed over each query's anchor
  /// window (one pass per anchor offset w: the anchors' features F_w, the
  /// monoid's num/den readouts with input F_w, weighted by the anchor
  /// values), then num / den.
  FailureOr<Value> emitAnchorRows(OpBuilder &b, Location loc,
                                  const ChunkTiles &tiles, std::string &error);
  /// LinSimp: rows of tokens [start − (W−1), start − (W−1) + rows) of the
  /// anchor operand `operand` (a kv-head tensor; null: the validity, 1 per
  /// real token) for a (batch entry, query head): tokens in [0, end) from
  /// the operand, those before 0 from the initial anchors `init` (null: 0),
  /// the rest 0. f32.
  Value loadWindow(OpBuilder &b, Location loc, Value operand, Value init,
                   Value batch, Value head, Value start, Value end,
                   int64_t rows, Value sequence, Value sequenceStart);
  /// φ(z) = m^-½ exp(Ω z − ‖z‖²/2), z = √scale x, for the rows of the
  /// chunk tile `x` [c, d] below `length` (0 for the padding rows).
  Value keyFeatures(OpBuilder &b, Location loc, Value x, Value omega,
                    double scale, Value length);
  /// LinSimp: the last W−1 anchors (r, u, validity) of every sequence.
  llvm::SmallVector<Value> emitFinalAnchors(OpBuilder &b, Location loc);
  /// Replaces the readout's results (output, and LinSimp's final anchors)
  /// and erases the chain.
  void finish(OpBuilder &b, Location loc, Value output,
              llvm::ArrayRef<Value> finalStates);
  /// The carried components of the scan's initial state (or the identity)
  /// for `sequence` and `head`.
  llvm::SmallVector<Value> initialCarry(OpBuilder &b, Location loc,
                                        Value sequence, Value head);
  /// An scf.for over chunk slots [lo, hi) of one (batch entry, head),
  /// carrying `carry`: the carried components, or with `allComponents`
  /// every component (combined by the full rule). With `rows` (output rows
  /// of the tokens from `first` on), every chunk is read out with the state
  /// carried into it and its rows are inserted; the loop's last result is
  /// then the rows.
  FailureOr<scf::ForOp> emitChunkLoop(OpBuilder &b, Location loc, Value batch,
                                      Value head, Value lo, Value hi,
                                      llvm::ArrayRef<Value> carry, Value rows,
                                      Value first, bool allComponents,
                                      llvm::ArrayRef<unsigned> inputs,
                                      std::string &error,
                                      Value sequence = Value(),
                                      Value sequenceStart = Value());
  /// Every component's f32 tensor type (a summary's, a state's).
  llvm::SmallVector<Type> componentTypes(OpBuilder &b) const;
  /// An empty [B, segments, H, component c] tensor (one value per run).
  Value emptyPerRun(OpBuilder &b, Location loc, unsigned c,
                    int64_t segments) const;
  /// Slice [lead..., component c] of a [lead..., shape] tensor.
  Value componentSlice(OpBuilder &b, Location loc, Value tensor, unsigned c,
                       llvm::ArrayRef<OpFoldResult> lead);
  /// Inserts `value` (component c) at [lead...] of `dest` in a forall's
  /// terminator.
  void insertComponent(OpBuilder &b, Location loc, Value value, Value dest,
                       unsigned c, llvm::ArrayRef<OpFoldResult> lead);

  ChainInfo info;
  const MonoidSpec &spec;
  int64_t chunk;
  const ChunkPlan &plan;

  // Set by prepare().
  llvm::SmallVector<unsigned> carried;
  llvm::SmallVector<llvm::SmallVector<int64_t>> componentShapes;
  llvm::SmallVector<Value> operandOfInput;
  std::unique_ptr<OpBuilder> ownHoist;
  std::unique_ptr<DecayTiles> decay;
  int64_t numChunks = 0;
  int64_t sequences = 0;
  Value cuSeqlens, slotStart, slotLength, chunkOffsets, slotSequence;
};

void ChunkRewriter::prepareShapes() {
  SegmentOp segment = info.segment;
  carried = spec.getCarryComponents();
  numChunks = (info.length + chunk - 1) / chunk;

  // Sizes of every symbol, from the segment results.
  MonoidDimBinder binder;
  for (auto [c, result] : llvm::enumerate(segment.getResults())) {
    std::string ignored;
    (void)binder.bind(spec.components[c],
                      cast<RankedTensorType>(result.getType())
                          .getShape()
                          .drop_front(3),
                      ignored);
  }
  for (unsigned c = 0; c < spec.components.size(); ++c)
    componentShapes.push_back(
        llvm::to_vector(binder.resolve(spec.components[c])));

  // Token inputs: segment operands (by monoid input), then readout inputs.
  operandOfInput.assign(spec.inputs.size(), Value());
  for (auto [i, input] : llvm::enumerate(spec.getTokenInputs()))
    operandOfInput[input] = segment.getInputs()[i];
  // LinSimp's readout input (the anchor features) is made per chunk.
  if (auto plain = dyn_cast<ReadoutOp>(info.readout))
    for (auto [i, input] : llvm::enumerate(spec.getReadoutInputs()))
      operandOfInput[input] = plain.getInputs()[i];

  // Packed sequences: chunks never straddle a sequence boundary, so each
  // sequence gets ceil(len / c) chunk slots; a table built at run time maps
  // slot -> (start token, length) and gives the scan its per-sequence chunk
  // offsets. ceil(T / c) + N slots always suffice.
  cuSeqlens = info.scan.getCuSeqlens();
  sequences = info.batch;
  if (cuSeqlens) {
    sequences = cast<RankedTensorType>(cuSeqlens.getType()).getDimSize(0) - 1;
    numChunks += sequences;
  }
}

void ChunkRewriter::prepareTiles(OpBuilder &b, OpBuilder &hoist,
                                 Location loc) {
  // Constant tiles are built once, ahead of the chunk loops that use them.
  // Where the caller has no separate hoisting point (the fused and
  // segmented forms build them inside the (sequence, head) loop), they go
  // before a marker placed here: the builder `b` moves on into the chunk
  // loops, and a tile first asked for deep inside one of them (LinSimp's
  // anchor loop, one branch of causal isolation) must still dominate every
  // later use.
  OpBuilder *at = &hoist;
  if (&hoist == &b) {
    Operation *marker = arith::ConstantIndexOp::create(b, loc, 0);
    ownHoist = std::make_unique<OpBuilder>(marker);
    at = ownHoist.get();
  }
  decay = std::make_unique<DecayTiles>(*at, loc, chunk, plan.gamma);
  if (cuSeqlens)
    std::tie(slotStart, slotLength, chunkOffsets, slotSequence) =
        buildChunkTable(b, loc, cuSeqlens, sequences, numChunks);
}

std::tuple<Value, Value, Value, Value>
ChunkRewriter::buildChunkTable(OpBuilder &b, Location loc, Value cuSeqlens,
                               int64_t sequences, int64_t slots) {
  Type i64 = b.getI64Type();
  auto zeros = [&](int64_t n) -> Value {
    Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
    return linalg::FillOp::create(
               b, loc, zero, Value(tensor::EmptyOp::create(b, loc, n, i64)))
        .getResult(0);
  };
  auto offsetAt = [&](OpBuilder &nb, Location l, Value i) -> Value {
    Value v = tensor::ExtractOp::create(nb, l, cuSeqlens, ValueRange{i});
    if (v.getType() != i64)
      v = arith::ExtSIOp::create(nb, l, i64, v);
    return v;
  };
  auto constant = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(v));
  };
  // Offsets must start at 0 and end at T; each sequence must not be
  // negative in length (checked per sequence below).
  Value first = offsetAt(b, loc, arith::ConstantIndexOp::create(b, loc, 0));
  Value last =
      offsetAt(b, loc, arith::ConstantIndexOp::create(b, loc, sequences));
  Value startsAtZero = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, first, constant(b, loc, 0));
  cf::AssertOp::create(b, loc, startsAtZero, "hla: cu_seqlens[0] must be 0");
  Value endsAtT = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, last,
                                        constant(b, loc, info.length));
  cf::AssertOp::create(b, loc, endsAtT,
                       "hla: cu_seqlens must end at the packed length T");

  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value numSequences = arith::ConstantIndexOp::create(b, loc, sequences);
  llvm::SmallVector<Value> init = {zeros(slots), zeros(slots),
                                   zeros(sequences + 1), constant(b, loc, 0),
                                   zeros(slots)};
  auto outer = scf::ForOp::create(
      b, loc, c0, numSequences, c1, init,
      [&](OpBuilder &nb, Location l, Value s, ValueRange iter) {
        Value begin = offsetAt(nb, l, s);
        Value end =
            offsetAt(nb, l, arith::AddIOp::create(nb, l, s, c1).getResult());
        Value ordered =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle, begin, end);
        cf::AssertOp::create(nb, l, ordered,
                             "hla: cu_seqlens must not decrease");
        Value offset = iter[3];
        Value offsets = tensor::InsertOp::create(nb, l, offset, iter[2],
                                                 ValueRange{s});
        // ceil((end - begin) / c) chunks for this sequence.
        Value length = arith::SubIOp::create(nb, l, end, begin);
        Value count = arith::CeilDivSIOp::create(
            nb, l, length, constant(nb, l, chunk));
        Value countIndex =
            arith::IndexCastOp::create(nb, l, nb.getIndexType(), count);
        Value s64 = arith::IndexCastOp::create(nb, l, i64, s);
        auto inner = scf::ForOp::create(
            nb, l, c0, countIndex, c1, ValueRange{iter[0], iter[1], iter[4]},
            [&](OpBuilder &ib, Location il, Value j, ValueRange tables) {
              Value j64 = arith::IndexCastOp::create(ib, il, i64, j);
              Value slot = arith::IndexCastOp::create(
                  ib, il, ib.getIndexType(),
                  arith::AddIOp::create(ib, il, offset, j64).getResult());
              Value start = arith::AddIOp::create(
                  ib, il, begin,
                  arith::MulIOp::create(ib, il, j64, constant(ib, il, chunk))
                      .getResult());
              Value size = arith::MinSIOp::create(
                  ib, il, constant(ib, il, chunk),
                  arith::SubIOp::create(ib, il, end, start).getResult());
              Value starts = tensor::InsertOp::create(ib, il, start, tables[0],
                                                      ValueRange{slot});
              Value sizes = tensor::InsertOp::create(ib, il, size, tables[1],
                                                     ValueRange{slot});
              Value owners = tensor::InsertOp::create(ib, il, s64, tables[2],
                                                      ValueRange{slot});
              scf::YieldOp::create(ib, il, ValueRange{starts, sizes, owners});
            });
        Value next = arith::AddIOp::create(nb, l, offset, count);
        scf::YieldOp::create(nb, l,
                             ValueRange{inner.getResult(0), inner.getResult(1),
                                        offsets, next, inner.getResult(2)});
      });
  Value offsets = tensor::InsertOp::create(b, loc, outer.getResult(3),
                                           outer.getResult(2),
                                           ValueRange{numSequences});
  return {outer.getResult(0), outer.getResult(1), offsets, outer.getResult(4)};
}

Value ChunkRewriter::loadTile(OpBuilder &b, Location loc, unsigned input,
                              Value operand, Value batch, Value start,
                              Value length, Value head) {
  auto type = cast<RankedTensorType>(operand.getType());
  // Grouped heads: query head h reads kv head h / (H / H_i).
  int64_t groups = info.heads / type.getDimSize(2);
  Value kvHead = head;
  if (groups != 1)
    kvHead = arith::DivUIOp::create(
        b, loc, head, arith::ConstantIndexOp::create(b, loc, groups));
  bool isScalar = type.getRank() == 3;
  int64_t width = isScalar ? 0 : type.getDimSize(3);
  llvm::SmallVector<OpFoldResult> offsets = {batch, start, kvHead};
  llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), length, idx(b, 1)};
  llvm::SmallVector<OpFoldResult> strides(type.getRank(), idx(b, 1));
  llvm::SmallVector<int64_t> sliceShape = {ShapedType::kDynamic};
  llvm::SmallVector<int64_t> tileShape = {chunk};
  if (!isScalar) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, width));
    sliceShape.push_back(width);
    tileShape.push_back(width);
  }
  Type element = type.getElementType();
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(sliceShape, element), operand, offsets,
      sizes, strides);
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  Value padded =
      linalg::FillOp::create(
          b, loc, zero,
          Value(tensor::EmptyOp::create(b, loc, tileShape, element)))
          .getResult(0);
  llvm::SmallVector<OpFoldResult> zeros(tileShape.size(), idx(b, 0));
  llvm::SmallVector<OpFoldResult> insertSizes = {length};
  if (!isScalar)
    insertSizes.push_back(idx(b, width));
  llvm::SmallVector<OpFoldResult> ones(tileShape.size(), idx(b, 1));
  padded = tensor::InsertSliceOp::create(b, loc, slice, padded, zeros,
                                         insertSizes, ones);
  TileBuilder tb(b, loc);
  return tb.castTo(padded, b.getF32Type());
}

std::pair<Value, Value> ChunkRewriter::chunkBounds(OpBuilder &b,
                                                   Location loc, Value n) {
  if (cuSeqlens) {
    auto read = [&](Value table) -> Value {
      Value v = tensor::ExtractOp::create(b, loc, table, ValueRange{n});
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    return {read(slotStart), read(slotLength)};
  }
  Value c = arith::ConstantIndexOp::create(b, loc, chunk);
  Value start = arith::MulIOp::create(b, loc, n, c);
  Value remaining = arith::SubIOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, info.length), start);
  Value length = arith::MinSIOp::create(b, loc, remaining, c);
  return {start, length};
}

void ChunkRewriter::loadTokens(OpBuilder &b, Location loc, ChunkTiles &tiles,
                               Value batch, Value start, Value head,
                               llvm::ArrayRef<unsigned> inputs) {
  tiles.batch = batch;
  tiles.start = start;
  tiles.head = head;
  tiles.tokens.assign(spec.inputs.size(), Value());
  for (unsigned input : inputs) {
    Value operand = operandOfInput[input];
    if (!operand)
      continue;
    // Random features of keys are made per chunk from the key tile: no
    // [B, T, H, m] tensor of them is ever stored.
    if (auto features = operand.getDefiningOp<FeatureMapOp>()) {
      Value keys = loadTile(b, loc, input, features.getInput(), batch, start,
                            tiles.length, head);
      tiles.tokens[input] =
          keyFeatures(b, loc, keys, features.getOmega(),
                      features.getScale().convertToDouble(), tiles.length);
      continue;
    }
    tiles.tokens[input] =
        loadTile(b, loc, input, operand, batch, start, tiles.length, head);
  }
}

llvm::SmallVector<unsigned>
ChunkRewriter::usedInputs(llvm::ArrayRef<PlannedOutput> outputs) const {
  llvm::SmallVector<unsigned> inputs;
  if (deltaRule) {
    for (unsigned i = 0; i < spec.inputs.size(); ++i)
      inputs.push_back(i);
    return inputs;
  }
  for (const PlannedOutput &out : outputs)
    for (const IndexTerm &t : out.terms)
      for (const ChainFactor &f : t.chain)
        if (f.kind == ChainFactor::Kind::Token &&
            !llvm::is_contained(inputs, f.slot))
          inputs.push_back(f.slot);
  return inputs;
}

FailureOr<Value> ChunkRewriter::emitOutput(TileBuilder &tb,
                                           const PlannedOutput &out,
                                           const ChunkTiles &tiles,
                                           bool isSummary,
                                           llvm::ArrayRef<int64_t> shape,
                                           std::string &error) {
  TermEmitter emitter(tb, spec, tiles, *decay);
  Value sum;
  for (const IndexTerm &term : out.terms) {
    FailureOr<Value> value = emitter.emit(term, isSummary, error);
    if (failed(value))
      return failure();
    sum = sum ? tb.add(sum, *value) : *value;
  }
  return sum ? sum : tb.zeros(shape);
}

FailureOr<llvm::SmallVector<Value>>
ChunkRewriter::emitSummaries(OpBuilder &b, Location loc,
                             const ChunkTiles &tiles, std::string &error) {
  if (deltaRule)
    return emitDeltaRule(b, loc, tiles, Value());
  TileBuilder tb(b, loc);
  llvm::SmallVector<Value> values(spec.components.size());
  for (const PlannedOutput &out : plan.summaries) {
    FailureOr<Value> v = emitOutput(tb, out, tiles, true,
                                    componentShapes[out.index], error);
    if (failed(v))
      return failure();
    values[out.index] = *v;
  }
  // Decay components: γ^length.
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    if (values[c])
      continue;
    Value w = DecayTiles::decayOf(b, loc, tiles.length, decay->getLogGamma());
    values[c] = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({}, b.getF32Type()), ValueRange{w});
  }
  return values;
}

FailureOr<Value> ChunkRewriter::emitReadoutRows(OpBuilder &b, Location loc,
                                                const ChunkTiles &tiles,
                                                std::string &error) {
  if (info.anchor)
    return emitAnchorRows(b, loc, tiles, error);
  if (deltaRule) {
    unsigned s = *spec.findComponent("S");
    FailureOr<llvm::SmallVector<Value>> rows =
        emitDeltaRule(b, loc, tiles, tiles.carried[s]);
    if (failed(rows))
      return failure();
    return TileBuilder(b, loc).castTo(rows->front(),
                                      info.outputType().getElementType());
  }
  RankedTensorType outType = info.outputType();
  int64_t width = outType.getDimSize(3);
  TileBuilder tb(b, loc);
  Value num, den;
  for (const PlannedOutput &out : plan.readouts) {
    llvm::SmallVector<int64_t> shape = {chunk};
    if (out.name == "num")
      shape.push_back(width);
    FailureOr<Value> v = emitOutput(tb, out, tiles, false, shape, error);
    if (failed(v))
      return failure();
    (out.name == "num" ? num : den) = *v;
  }
  Value result = num;
  if (den) {
    // num / (den + eps), row by row.
    double eps =
        cast<ReadoutOp>(info.readout).getEpsAttr().getValueAsDouble();
    AffineMap id = b.getMultiDimIdentityMap(1);
    Value inverse = tb.generic(
        {den}, tb.empty({chunk}), {id, id}, {IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value shifted = arith::AddFOp::create(
              nb, l, args[0],
              arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(eps)));
          Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1));
          return arith::DivFOp::create(nb, l, one, shifted);
        });
    result = tb.scaleRows(num, inverse);
  }
  return tb.castTo(result, outType.getElementType());
}

Value ChunkRewriter::firstNonFiniteRow(OpBuilder &b, Location loc,
                                       llvm::ArrayRef<Value> tiles) {
  TileBuilder tb(b, loc);
  Type f32 = b.getF32Type();
  // The row indices are small integers: exact in f32, which keeps the
  // reduction an ordinary float min.
  Value none = tb.scalar(double(chunk));
  Value first = linalg::FillOp::create(
                    b, loc, none,
                    Value(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{},
                                                  f32)))
                    .getResult(0);
  for (Value tile : tiles) {
    int64_t rank = cast<RankedTensorType>(tile.getType()).getRank();
    MLIRContext *ctx = b.getContext();
    AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap scalar = AffineMap::get(rank, 0, {}, ctx);
    llvm::SmallVector<IteratorType> its(rank, IteratorType::reduction);
    first = tb.generic(
        {tile}, first, {all, scalar}, its,
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value magnitude = math::AbsFOp::create(nb, l, args[0]);
          Value inf = arith::ConstantOp::create(
              nb, l, nb.getF32FloatAttr(std::numeric_limits<float>::infinity()));
          // False for NaN (unordered) and for ±inf.
          Value finite = arith::CmpFOp::create(
              nb, l, arith::CmpFPredicate::OLT, magnitude, inf);
          Value row = arith::SIToFPOp::create(
              nb, l, f32,
              arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                         linalg::IndexOp::create(nb, l, 0)));
          Value lower = arith::MinimumFOp::create(nb, l, args[1], row);
          return arith::SelectOp::create(nb, l, finite, args[1], lower);
        });
  }
  Value value = tensor::ExtractOp::create(b, loc, first, ValueRange{});
  Value asInt = arith::FPToSIOp::create(b, loc, b.getI64Type(), value);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), asInt);
}

FailureOr<Value> ChunkRewriter::emitCausalRows(OpBuilder &b, Location loc,
                                               const ChunkTiles &tiles,
                                               std::string &error) {
  FailureOr<Value> rows = emitReadoutRows(b, loc, tiles, error);
  if (failed(rows) || !causalIsolation)
    return rows;
  llvm::SmallVector<Value> checked;
  for (Value t : tiles.tokens)
    if (t)
      checked.push_back(t);
  if (info.anchor) {
    // LinSimp reads its query and anchor operands directly.
    AnchorReadoutOp op = info.anchor;
    for (Value operand :
         {op.getQuery(), op.getAnchorKey(), op.getAnchorValue()})
      checked.push_back(loadTile(b, loc, 0, operand, tiles.batch, tiles.start,
                                 tiles.length, tiles.head));
  }
  if (checked.empty())
    return rows;
  // Σ x · 0 over every token value: NaN exactly when one is NaN or ±inf
  // (the padding rows are zeros). One multiply-add per value on the common
  // path; the first poisoned row is only looked for in the branch.
  TileBuilder tb(b, loc);
  Value total = linalg::FillOp::create(
                    b, loc, tb.scalar(0.0),
                    Value(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{},
                                                  b.getF32Type())))
                    .getResult(0);
  // One sum over all tiles of a shape (q, k, v alike): one pass, and on a
  // GPU one block-wide reduction with its barriers, per shape.
  llvm::MapVector<Type, llvm::SmallVector<Value>> byShape;
  for (Value tile : checked)
    byShape[tile.getType()].push_back(tile);
  for (auto &[type, group] : byShape) {
    int64_t rank = cast<RankedTensorType>(type).getRank();
    MLIRContext *ctx = b.getContext();
    llvm::SmallVector<IteratorType> its(rank, IteratorType::reduction);
    llvm::SmallVector<AffineMap> maps(group.size(),
                                      AffineMap::getMultiDimIdentityMap(rank, ctx));
    maps.push_back(AffineMap::get(rank, 0, {}, ctx));
    total = tb.generic(
        group, total, maps, its,
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
          Value terms;
          for (Value x : args.drop_back()) {
            Value nanIfNotFinite = arith::MulFOp::create(nb, l, x, zero);
            terms = terms ? Value(arith::AddFOp::create(nb, l, terms,
                                                        nanIfNotFinite))
                          : nanIfNotFinite;
          }
          return arith::AddFOp::create(nb, l, args.back(), terms);
        });
  }
  Value sum = tensor::ExtractOp::create(b, loc, total, ValueRange{});
  Value poisoned =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, sum, sum);
  auto branch = scf::IfOp::create(b, loc, TypeRange{rows->getType()}, poisoned,
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, *rows);

  b.setInsertionPointToStart(branch.thenBlock());
  Value first = firstNonFiniteRow(b, loc, checked);
  // The chunk as `first` tokens: the rows from `first` on zeroed.
  auto keepRowsBelow = [&](Value tile, Value bound) -> Value {
    auto type = cast<RankedTensorType>(tile.getType());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    llvm::SmallVector<IteratorType> its(type.getRank(),
                                        IteratorType::parallel);
    return tb.generic(
        {tile}, tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType()),
        {id, id}, its, [&](OpBuilder &nb, Location l, ValueRange args) {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value below = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::slt, row, bound);
          Value zero = arith::ConstantOp::create(
              nb, l, nb.getFloatAttr(type.getElementType(), 0.0));
          return arith::SelectOp::create(nb, l, below, args[0], zero);
        });
  };
  ChunkTiles clean = tiles;
  clean.length = first;
  for (Value &t : clean.tokens)
    if (t)
      t = keepRowsBelow(t, first);
  FailureOr<Value> cleanRows = emitReadoutRows(b, loc, clean, error);
  if (failed(cleanRows))
    return failure();
  // Rows [0, first) from the clean read-out, written over the plain ones
  // in place: both branches then yield the plain rows' buffer, and
  // bufferization needs no copy or run-time ownership check for the if.
  auto rowsType = cast<RankedTensorType>(rows->getType());
  AffineMap id = b.getMultiDimIdentityMap(rowsType.getRank());
  llvm::SmallVector<IteratorType> its(rowsType.getRank(),
                                      IteratorType::parallel);
  Value merged = tb.generic(
      {*cleanRows}, *rows, {id, id}, its,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value below = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                            row, first);
        return arith::SelectOp::create(nb, l, below, args[0], args[1]);
      });
  scf::YieldOp::create(b, loc, merged);
  return branch.getResult(0);
}

llvm::SmallVector<Value> ChunkRewriter::initialCarry(OpBuilder &b,
                                                     Location loc,
                                                     Value sequence,
                                                     Value head) {
  llvm::SmallVector<Value> carry;
  Type f32 = b.getF32Type();
  for (auto [i, c] : llvm::enumerate(carried)) {
    llvm::ArrayRef<int64_t> shape = componentShapes[c];
    auto type = RankedTensorType::get(shape, f32);
    if (info.scan.getInit().empty()) {
      carry.push_back(buildMonoidIdentity(b, loc, spec, c, type));
      continue;
    }
    llvm::SmallVector<OpFoldResult> offsets = {sequence, head};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1)};
    for (int64_t s : shape) {
      offsets.push_back(idx(b, 0));
      sizes.push_back(idx(b, s));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    carry.push_back(tensor::ExtractSliceOp::create(
        b, loc, type, info.scan.getInit()[i], offsets, sizes, strides));
  }
  return carry;
}

llvm::SmallVector<Type> ChunkRewriter::componentTypes(OpBuilder &b) const {
  llvm::SmallVector<Type> types;
  for (llvm::ArrayRef<int64_t> shape : componentShapes)
    types.push_back(RankedTensorType::get(shape, b.getF32Type()));
  return types;
}

Value ChunkRewriter::emptyPerRun(OpBuilder &b, Location loc, unsigned c,
                                 int64_t segments) const {
  llvm::SmallVector<int64_t> shape = {info.batch, segments, info.heads};
  llvm::append_range(shape, componentShapes[c]);
  return tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
}

Value ChunkRewriter::componentSlice(OpBuilder &b, Location loc, Value tensor,
                                    unsigned c,
                                    llvm::ArrayRef<OpFoldResult> lead) {
  llvm::SmallVector<OpFoldResult> offsets(lead), sizes(lead.size(), idx(b, 1));
  for (int64_t size : componentShapes[c]) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, size));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(componentShapes[c], b.getF32Type()),
      tensor, offsets, sizes, strides);
}

void ChunkRewriter::insertComponent(OpBuilder &b, Location loc, Value value,
                                    Value dest, unsigned c,
                                    llvm::ArrayRef<OpFoldResult> lead) {
  llvm::SmallVector<OpFoldResult> offsets(lead), sizes(lead.size(), idx(b, 1));
  for (int64_t size : componentShapes[c]) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, size));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  tensor::ParallelInsertSliceOp::create(b, loc, value, dest, offsets, sizes,
                                        strides);
}

FailureOr<scf::ForOp> ChunkRewriter::emitChunkLoop(
    OpBuilder &b, Location loc, Value batch, Value head, Value lo, Value hi,
    llvm::ArrayRef<Value> carry, Value rows, Value first, bool allComponents,
    llvm::ArrayRef<unsigned> inputs, std::string &error, Value sequence,
    Value sequenceStart) {
  RankedTensorType outType = info.outputType();
  int64_t width = outType.getDimSize(3);
  auto rowsType = RankedTensorType::get({ShapedType::kDynamic, width},
                                        outType.getElementType());
  llvm::SmallVector<Type> summaryTypes = componentTypes(b);
  llvm::SmallVector<Value> iterInit(carry);
  if (rows)
    iterInit.push_back(rows);
  size_t k = carry.size();
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);

  bool failedEmission = false;
  auto loop = scf::ForOp::create(
      b, loc, lo, hi, c1, iterInit,
      [&](OpBuilder &nb, Location l, Value n, ValueRange iter) {
        auto [start, length] = chunkBounds(nb, l, n);
        ChunkTiles tiles;
        tiles.chunk = chunk;
        tiles.length = length;
        loadTokens(nb, l, tiles, batch, start, head, inputs);
        tiles.sequence = sequence;
        tiles.sequenceStart = sequenceStart;
        llvm::SmallVector<Value> next;
        Value written;
        if (rows) {
          tiles.carried.assign(spec.components.size(), Value());
          for (auto [i, c] : llvm::enumerate(carried))
            tiles.carried[c] = iter[i];
          FailureOr<Value> result = emitCausalRows(nb, l, tiles, error);
          if (failed(result)) {
            failedEmission = true;
            scf::YieldOp::create(nb, l, iter);
            return;
          }
          Value chunkRows = tensor::ExtractSliceOp::create(
              nb, l, rowsType, *result,
              llvm::ArrayRef<OpFoldResult>{idx(nb, 0), idx(nb, 0)},
              llvm::ArrayRef<OpFoldResult>{length, idx(nb, width)},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)});
          Value offset = arith::SubIOp::create(nb, l, start, first);
          written = tensor::InsertSliceOp::create(
              nb, l, chunkRows, iter[k],
              llvm::ArrayRef<OpFoldResult>{offset, idx(nb, 0)},
              llvm::ArrayRef<OpFoldResult>{length, idx(nb, width)},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)});
        }
        FailureOr<llvm::SmallVector<Value>> summaries =
            emitSummaries(nb, l, tiles, error);
        if (failed(summaries)) {
          failedEmission = true;
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        if (allComponents)
          next = llvm::SmallVector<Value>(
              CombineOp::create(nb, l, TypeRange(summaryTypes),
                                info.scan.getMonoid(), iter.take_front(k),
                                *summaries)
                  .getResults());
        else
          next = ::mlir::hla::combineCarried(nb, l, info.scan.getMonoid(),
                                             iter.take_front(k), *summaries,
                                             summaryTypes);
        // The new state is copied into the carried one: the loop then
        // updates one buffer per component in place instead of yielding a
        // fresh allocation per chunk (which bufferization could only free
        // with run-time ownership checks).
        for (size_t i = 0; i < k; ++i)
          next[i] = linalg::CopyOp::create(nb, l, next[i], iter[i])
                        .getResult(0);
        if (rows)
          next.push_back(written);
        scf::YieldOp::create(nb, l, next);
      });
  if (failedEmission)
    return failure();
  return loop;
}

FailureOr<llvm::SmallVector<Value>>
ChunkRewriter::emitDeltaRule(OpBuilder &b, Location loc,
                             const ChunkTiles &tiles, Value carried) {
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
  DeltaChunk &parts = deltaChunks[k];
  bool built = static_cast<bool>(parts.gamma);
  Value gamma = parts.gamma;

  // P[r, s] = Σ_d x[r,d] y[s,d] e^{Γ[r,d] − Γ[s,d]} for s < r (s ≤ r when
  // not strict): the decay between two tokens of the chunk, never e^{−Γ}
  // alone (it would overflow).
  auto pairs = [&](Value x, Value y, bool strict) -> Value {
    return tb.generic(
        {x, y, gamma, gamma}, tb.zeros({c, c}),
        {map3({r, d}), map3({s, d}), map3({r, d}), map3({s, d}), map3({r, s})},
        {IT::parallel, IT::parallel, IT::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value col = linalg::IndexOp::create(nb, l, 1);
          Value inside = arith::CmpIOp::create(
              nb, l,
              strict ? arith::CmpIPredicate::slt : arith::CmpIPredicate::sle,
              col, row);
          Value decay = math::ExpOp::create(
              nb, l, arith::SubFOp::create(nb, l, args[2], args[3]));
          Value term = arith::MulFOp::create(
              nb, l, arith::MulFOp::create(nb, l, args[0], args[1]), decay);
          Value add = arith::AddFOp::create(nb, l, args[4], term);
          return arith::SelectOp::create(nb, l, inside, add, args[4]);
        });
  };
  if (!built) {
    // Γ[r] = Σ_{s ≤ r} g[s]: the in-chunk cumulative log-decay per channel.
    gamma = tb.generic(
        {g}, tb.zeros({c, dk}), {map3({s, d}), map3({r, d})},
        {IT::parallel, IT::reduction, IT::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value col = linalg::IndexOp::create(nb, l, 1);
          Value inside =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle, col, row);
          Value add = arith::AddFOp::create(nb, l, args[1], args[0]);
          return arith::SelectOp::create(nb, l, inside, add, args[1]);
        });

    Value lower = tb.scaleRows(pairs(k, k, /*strict=*/true), beta);

    // T = (I + L)^-1 diag(β), row by row (forward substitution):
    // T[r] = β_r e_r − L[r] T (rows ≥ r of T are still 0).
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value cC = arith::ConstantIndexOp::create(b, loc, c);
    auto rowType = RankedTensorType::get({1, c}, b.getF32Type());
    auto solve = scf::ForOp::create(
        b, loc, c0, cC, c1, ValueRange{tb.zeros({c, c})},
        [&](OpBuilder &nb, Location l, Value row, ValueRange iter) {
          TileBuilder t(nb, l);
          llvm::SmallVector<OpFoldResult> at = {row, idx(nb, 0)};
          llvm::SmallVector<OpFoldResult> size = {idx(nb, 1), idx(nb, c)};
          llvm::SmallVector<OpFoldResult> one = {idx(nb, 1), idx(nb, 1)};
          Value lrow = tensor::ExtractSliceOp::create(nb, l, rowType, lower, at,
                                                      size, one);
          Value reach = t.matmul(lrow, iter[0]);
          Value betaR = tensor::ExtractOp::create(nb, l, beta, ValueRange{row});
          AffineMap id = nb.getMultiDimIdentityMap(2);
          Value next = t.generic(
              {reach}, t.empty({1, c}), {id, id}, {IT::parallel, IT::parallel},
              [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                Value col = linalg::IndexOp::create(eb, el, 1);
                Value diag = arith::CmpIOp::create(
                    eb, el, arith::CmpIPredicate::eq, col, row);
                Value e = arith::SelectOp::create(eb, el, diag, betaR,
                                                  cst(eb, el, 0.0));
                return arith::SubFOp::create(eb, el, e, args[0]);
              });
          Value written = tensor::InsertSliceOp::create(nb, l, next, iter[0], at,
                                                        size, one);
          scf::YieldOp::create(nb, l, written);
        });
    Value tri = solve.getResult(0);

    Value expGamma = tb.generic(
        {gamma}, tb.empty({c, dk}), {id2, id2}, {IT::parallel, IT::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return math::ExpOp::create(nb, l, args[0]);
        });
    parts.w = tb.matmul(tri, tb.mul(expGamma, k)); // W = T (e^Γ ⊙ K)
    parts.u = tb.matmul(tri, v);                    // U = T V
    parts.expGamma = expGamma;
    parts.gamma = gamma;
  }
  Value expGamma = parts.expGamma, w = parts.w, u = parts.u;

  if (!carried) {
    // The chunk's map S ↦ A S + B: A = Diag(e^{Γ_last}) − K̃ᵀ W,
    // B = K̃ᵀ U, K̃[s] = e^{Γ_last − Γ[s]} ⊙ k[s].
    Value last = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({dk}, b.getF32Type()), gamma,
        llvm::ArrayRef<OpFoldResult>{idx(b, c - 1), idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, dk)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
    AffineMap cols = AffineMap::get(2, 0, {b.getAffineDimExpr(1)}, ctx);
    Value kTilde = tb.generic(
        {last, gamma, k}, tb.empty({c, dk}), {cols, id2, id2, id2},
        {IT::parallel, IT::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value decay = math::ExpOp::create(
              nb, l, arith::SubFOp::create(nb, l, args[0], args[1]));
          return arith::MulFOp::create(nb, l, decay, args[2]);
        });
    Value kw = tb.matmul(kTilde, w, /*transA=*/true);
    AffineMap rows = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx);
    Value a = tb.generic(
        {last, kw}, tb.empty({dk, dk}), {rows, id2, id2},
        {IT::parallel, IT::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value i = linalg::IndexOp::create(nb, l, 0);
          Value j = linalg::IndexOp::create(nb, l, 1);
          Value diag =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, i, j);
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
  Value attn = tb.scale(pairs(q, k, /*strict=*/false), scale);
  Value delta = tb.generic(
      {u, tb.matmul(w, carried)}, tb.empty(TileBuilder::shapeOf(u)),
      {id2, id2, id2}, {IT::parallel, IT::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::SubFOp::create(nb, l, args[0], args[1]);
      });
  Value rowsOut = tb.add(tb.matmul(qs, carried), tb.matmul(attn, delta));
  return llvm::SmallVector<Value>{rowsOut};
}

void ChunkRewriter::finish(OpBuilder &, Location loc, Value output,
                           llvm::ArrayRef<Value> finalStates) {
  // New ops go where the chain's readout was: after the chunk loops.
  OpBuilder b(info.readout);
  llvm::SmallVector<Value> results = {output};
  if (info.anchor && !info.anchor.getFinalAnchors().empty())
    llvm::append_range(results, emitFinalAnchors(b, loc));
  info.readout->replaceAllUsesWith(results);
  for (auto [old, now] : llvm::zip(info.scan.getFinal(), finalStates))
    old.replaceAllUsesWith(now);
  info.readout->erase();
  info.scan.erase();
  Operation *segment = info.segment;
  llvm::SmallVector<Operation *> producers;
  for (Value input : info.segment.getInputs())
    if (auto features = input.getDefiningOp<FeatureMapOp>())
      producers.push_back(features);
  segment->erase();
  // Feature maps folded into the chunk loops.
  for (Operation *op : producers)
    if (op->use_empty())
      op->erase();
}

Value ChunkRewriter::keyFeatures(OpBuilder &b, Location loc, Value x,
                                 Value omega, double scale, Value length) {
  TileBuilder tb(b, loc);
  auto omegaType = cast<RankedTensorType>(omega.getType());
  int64_t features = omegaType.getDimSize(0);
  double root = std::sqrt(scale);
  Value projected = tb.matmul(x, omega, false, /*transB=*/true);
  Value halfNorm = tb.scale(tb.dotRows(x, x), 0.5 * scale);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows = AffineMap::get(2, 0, {b.getAffineDimExpr(0)},
                                  b.getContext());
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
        Value phi =
            arith::MulFOp::create(nb, l, math::ExpOp::create(nb, l, e), c(norm));
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value real = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                           row, length);
        return arith::SelectOp::create(nb, l, real, phi, c(0.0));
      });
}

Value ChunkRewriter::loadWindow(OpBuilder &b, Location loc, Value operand,
                                Value init, Value batch, Value head,
                                Value start, Value end, int64_t rows,
                                Value sequence, Value sequenceStart) {
  int64_t before = info.anchor.getWindow() - 1;
  Type f32 = b.getF32Type();
  TileBuilder tb(b, loc);
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // Tokens [start − nb, end) are real (nb: how many of the W − 1 before
  // `start` are in the sequence), at rows [before − nb, ...); the
  // before − nb rows ahead of them are anchors [nb, before) of `init`.
  Value nb = arith::MinSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, start, sequenceStart),
      cst(before));
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
    int64_t groups = info.heads / type.getDimSize(2);
    Value kvHead = head;
    if (groups != 1)
      kvHead = arith::DivUIOp::create(b, loc, head, cst(groups));
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic, width}, element),
        operand,
        llvm::ArrayRef<OpFoldResult>{batch, realLo, kvHead, idx(b, 0)},
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
          Value before = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::slt, row, last);
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
    tile = tensor::InsertSliceOp::create(b, loc, slice, tile, at, initSizes,
                                         ones);
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
    end = at(arith::AddIOp::create(
        b, loc, si, arith::ConstantIndexOp::create(b, loc, 1)));
  }
  Value operands[] = {op.getAnchorKey(), op.getAnchorValue(), Value()};
  llvm::SmallVector<Value> tiles;
  for (unsigned i = 0; i < 3; ++i)
    tiles.push_back(loadWindow(b, loc, operands[i],
                               initial.empty() ? Value() : initial[i], batch,
                               hi, end, end, before, si, begin));
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
    tensor::ParallelInsertSliceOp::create(b, loc, tiles[i],
                                          body->getArgument(2 + i), offsets,
                                          sizes, strides);
  }
  return llvm::SmallVector<Value>(loop.getResults());
}

FailureOr<Value> ChunkRewriter::emitAnchorRows(OpBuilder &b, Location loc,
                                               const ChunkTiles &tiles,
                                               std::string &error) {
  AnchorReadoutOp op = info.anchor;
  int64_t window = op.getWindow();
  int64_t before = window - 1;
  double rootTau = std::sqrt(op.getScale().convertToDouble());
  RankedTensorType outType = info.outputType();
  int64_t width = outType.getDimSize(3);
  auto omegaType = cast<RankedTensorType>(op.getOmega().getType());
  int64_t features = omegaType.getDimSize(0);
  int64_t d = omegaType.getDimSize(1);
  Type f32 = b.getF32Type();
  TileBuilder tb(b, loc);
  ValueRange initial = op.getAnchors();

  // The chunk's queries and the anchor rows of its windows: tokens
  // [start − (W−1), start + c).
  Value q = loadTile(b, loc, 0, op.getQuery(), tiles.batch, tiles.start,
                     tiles.length, tiles.head);
  Value end = arith::AddIOp::create(b, loc, tiles.start, tiles.length);
  int64_t rows = chunk + before;
  Value anchorRows[3];
  Value operands[] = {op.getAnchorKey(), op.getAnchorValue(), Value()};
  Value sequence = tiles.sequence ? tiles.sequence : tiles.batch;
  Value sequenceStart = tiles.sequenceStart
                            ? tiles.sequenceStart
                            : arith::ConstantIndexOp::create(b, loc, 0);
  for (unsigned i = 0; i < 3; ++i)
    anchorRows[i] = loadWindow(b, loc, operands[i],
                               initial.empty() ? Value() : initial[i],
                               tiles.batch, tiles.head, tiles.start, end, rows,
                               sequence, sequenceStart);
  // Ω is read where it is (global memory on a GPU), in its own type.
  Value omega = op.getOmega();

  unsigned fInput = spec.getReadoutInputs().front();
  const PlannedOutput *numPlan = nullptr, *denPlan = nullptr;
  for (const PlannedOutput &out : plan.readouts)
    (out.name == "num" ? numPlan : denPlan) = &out;
  if (!numPlan || !denPlan) {
    error = "LinSimp's monoid must read out num and den";
    return failure();
  }

  // Accumulators over the window: Σ_c u_c ⊙ num_ic, Σ_c den_ic, and the
  // query's running maximum of its anchors' feature exponents.
  const float lowest = -3.0e38f;
  Value accNum = tb.zeros({chunk, width});
  Value accDen = tb.zeros({chunk});
  Value lowestF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(lowest));
  Value mu = linalg::FillOp::create(b, loc, lowestF, tb.empty({chunk}))
                 .getResult(0);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value cW = arith::ConstantIndexOp::create(b, loc, window);
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows2 = AffineMap::get(2, 0, {b.getAffineDimExpr(0)},
                                   b.getContext());
  using IT = IteratorType;
  bool failedEmission = false;
  auto loop = scf::ForOp::create(
      b, loc, c0, cW, c1, ValueRange{accNum, accDen, mu},
      [&](OpBuilder &nb, Location l, Value w, ValueRange acc) {
        TileBuilder t(nb, l);
        // Anchor c = i − w of query i is row i + (W−1) − w of the window
        // tiles: one contiguous slice per offset w.
        Value offset = arith::SubIOp::create(
            nb, l, arith::ConstantIndexOp::create(nb, l, before), w);
        auto rowsOf = [&](Value tile, int64_t cols) -> Value {
          llvm::SmallVector<OpFoldResult> offsets = {offset};
          llvm::SmallVector<OpFoldResult> sizes = {idx(nb, chunk)};
          llvm::SmallVector<int64_t> shape = {chunk};
          if (cols) {
            offsets.push_back(idx(nb, 0));
            sizes.push_back(idx(nb, cols));
            shape.push_back(cols);
          }
          llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(nb, 1));
          return tensor::ExtractSliceOp::create(
              nb, l, RankedTensorType::get(shape, f32), tile, offsets, sizes,
              strides);
        };
        Value r = rowsOf(anchorRows[0], d);
        Value u = rowsOf(anchorRows[1], width);
        Value valid = rowsOf(anchorRows[2], 0);
        // x_ic = τ^½ (q_i ⊙ r_c); exponent Ω x − ‖x‖²/2.
        Value x = t.generic(
            {q, r}, t.empty({chunk, d}), {id2, id2, id2},
            {IT::parallel, IT::parallel},
            [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
              Value prod = arith::MulFOp::create(eb, el, args[0], args[1]);
              return arith::MulFOp::create(
                  eb, el, prod,
                  arith::ConstantOp::create(eb, el,
                                            eb.getF32FloatAttr(rootTau)));
            });
        // (The exponent is never stored: ‖x‖²/2 is one number per row, so
        // its row maximum is the projections' maximum minus it.)
        Value halfNorm = t.scale(t.dotRows(x, x), 0.5);
        Value projected = t.matmul(x, omega, false, /*transB=*/true);
        // The running maximum over the query's real anchors so far, and the
        // factor that rescales what was accumulated under the old one.
        Value next = acc[2], rescale;
        if (stableFeatures) {
          Value rowMax = t.generic(
              {projected},
              linalg::FillOp::create(
                  nb, l,
                  Value(arith::ConstantOp::create(nb, l,
                                                  nb.getF32FloatAttr(lowest))),
                  t.empty({chunk}))
                  .getResult(0),
              {id2, rows2}, {IT::parallel, IT::reduction},
              [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                return arith::MaximumFOp::create(eb, el, args[0], args[1]);
              });
          next = t.generic(
              {acc[2], rowMax, valid, halfNorm}, t.empty({chunk}),
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
              {acc[2], next}, t.empty({chunk}), {id1, id1, id1},
              {IT::parallel},
              [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                return math::ExpOp::create(
                    eb, el, arith::SubFOp::create(eb, el, args[0], args[1]));
              });
        }
        // F_w = m^-½ exp(exponent − μ) for real anchors, 0 for padding.
        double norm = 1.0 / std::sqrt(double(features));
        Value featuresTile = t.generic(
            {projected, halfNorm, next, valid}, t.empty({chunk, features}),
            {id2, rows2, rows2, rows2, id2}, {IT::parallel, IT::parallel},
            [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
              Value e = arith::SubFOp::create(eb, el, args[0], args[1]);
              if (stableFeatures)
                e = arith::SubFOp::create(eb, el, e, args[2]);
              Value f = arith::MulFOp::create(
                  eb, el, math::ExpOp::create(eb, el, e),
                  arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(norm)));
              Value zero =
                  arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(0));
              Value real = arith::CmpFOp::create(
                  eb, el, arith::CmpFPredicate::OGT, args[3], zero);
              return arith::SelectOp::create(eb, el, real, f, zero);
            });
        ChunkTiles anchorTiles = tiles;
        anchorTiles.tokens[fInput] = featuresTile;
        FailureOr<Value> num = emitOutput(t, *numPlan, anchorTiles, false,
                                          {chunk, width}, error);
        FailureOr<Value> den = failure();
        if (succeeded(num))
          den = emitOutput(t, *denPlan, anchorTiles, false, {chunk}, error);
        if (failed(den)) {
          failedEmission = true;
          scf::YieldOp::create(nb, l, acc);
          return;
        }
        Value weighted = t.mul(u, *num);
        Value sumNum = acc[0], sumDen = acc[1];
        if (stableFeatures) {
          sumNum = t.scaleRows(sumNum, rescale);
          sumDen = t.mul(sumDen, rescale);
        }
        // Copied into the carried buffers, updated in place (as the chunk
        // loops do with their state).
        Value results[] = {t.add(sumNum, weighted), t.add(sumDen, *den), next};
        llvm::SmallVector<Value> yields;
        for (unsigned i = 0; i < 3; ++i)
          yields.push_back(
              linalg::CopyOp::create(nb, l, results[i], acc[i]).getResult(0));
        scf::YieldOp::create(nb, l, yields);
      });
  if (failedEmission)
    return failure();
  // Joint normalisation over every (j, c) pair of the query: no eps (the
  // features are positive; a real query has its own token as an anchor).
  Value inverse = tb.generic(
      {loop.getResult(1)}, tb.empty({chunk}), {id1, id1}, {IT::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1));
        return arith::DivFOp::create(nb, l, one, args[0]);
      });
  return tb.castTo(tb.scaleRows(loop.getResult(0), inverse),
                   outType.getElementType());
}

LogicalResult ChunkRewriter::rewritePhased(std::string &error) {
  Operation *readout = info.readout;
  ScanOp scan = info.scan;
  SegmentOp segment = info.segment;
  Location loc = readout->getLoc();
  OpBuilder b(readout);
  OpBuilder hoist(segment);
  Type f32 = b.getF32Type();
  prepareShapes();
  prepareTiles(b, hoist, loc);

  // Phase 1: chunk summaries of every component.
  llvm::SmallVector<Value> summaryInits;
  llvm::SmallVector<llvm::SmallVector<int64_t>> summaryShapes;
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    llvm::SmallVector<int64_t> shape = {info.batch, numChunks, info.heads};
    llvm::append_range(shape, componentShapes[c]);
    summaryShapes.push_back(shape);
    summaryInits.push_back(tensor::EmptyOp::create(b, loc, shape, f32));
  }
  llvm::SmallVector<unsigned> summaryInputs = usedInputs(plan.summaries);
  auto phase1 = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, numChunks), idx(b, info.heads)},
      summaryInits, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = phase1.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), ni = body->getArgument(1),
          hi = body->getArgument(2);
    auto [start, length] = chunkBounds(b, loc, ni);
    ChunkTiles tiles;
    tiles.chunk = chunk;
    tiles.length = length;
    loadTokens(b, loc, tiles, bi, start, hi, summaryInputs);
    FailureOr<llvm::SmallVector<Value>> values =
        emitSummaries(b, loc, tiles, error);
    if (failed(values))
      return failure();
    b.setInsertionPointToStart(phase1.getTerminator().getBody());
    for (unsigned c = 0; c < spec.components.size(); ++c) {
      unsigned rank = summaryShapes[c].size();
      llvm::SmallVector<OpFoldResult> offsets = {bi, ni, hi};
      llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1), idx(b, 1)};
      for (int64_t s : componentShapes[c]) {
        offsets.push_back(idx(b, 0));
        sizes.push_back(idx(b, s));
      }
      llvm::SmallVector<OpFoldResult> strides(rank, idx(b, 1));
      tensor::ParallelInsertSliceOp::create(b, loc, (*values)[c],
                                            body->getArgument(3 + c), offsets,
                                            sizes, strides);
    }
  }

  // Phase 2: the state carried into every chunk, and the final state.
  llvm::SmallVector<Type> scanTypes;
  for (unsigned c : carried)
    scanTypes.push_back(summaryInits[c].getType());
  bool wantFinal = !scan.getFinal().empty();
  if (wantFinal)
    llvm::append_range(scanTypes, scan.getFinal().getTypes());
  auto carry = ScanOp::create(b, loc, scanTypes, scan.getMonoid(),
                              phase1.getResults(), scan.getInit(),
                              /*cu_seqlens=*/chunkOffsets, /*exclusive=*/true,
                              /*axis=*/1);

  // Phase 3: every readout at every position.
  RankedTensorType outType = info.outputType();
  int64_t width = outType.getDimSize(3);
  Value outInit = tensor::EmptyOp::create(b, loc, outType.getShape(),
                                          outType.getElementType());
  llvm::SmallVector<unsigned> readoutInputs = usedInputs(plan.readouts);
  auto phase3 = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, numChunks), idx(b, info.heads)},
      ValueRange{outInit}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = phase3.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), ni = body->getArgument(1),
          hi = body->getArgument(2);
    auto [start, length] = chunkBounds(b, loc, ni);
    ChunkTiles tiles;
    tiles.chunk = chunk;
    tiles.length = length;
    loadTokens(b, loc, tiles, bi, start, hi, readoutInputs);
    if (cuSeqlens) {
      // The slot's sequence and where it starts (for LinSimp's windows).
      auto asIndex = [&](Value v) -> Value {
        return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
      };
      tiles.sequence = asIndex(
          tensor::ExtractOp::create(b, loc, slotSequence, ValueRange{ni}));
      tiles.sequenceStart = asIndex(tensor::ExtractOp::create(
          b, loc, cuSeqlens, ValueRange{tiles.sequence}));
    }
    tiles.carried.assign(spec.components.size(), Value());
    for (auto [i, c] : llvm::enumerate(carried)) {
      llvm::ArrayRef<int64_t> shape = componentShapes[c];
      llvm::SmallVector<OpFoldResult> offsets = {bi, ni, hi};
      llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1), idx(b, 1)};
      for (int64_t s : shape) {
        offsets.push_back(idx(b, 0));
        sizes.push_back(idx(b, s));
      }
      llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
      tiles.carried[c] = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get(shape, f32), carry.getResult(i),
          offsets, sizes, strides);
    }
    FailureOr<Value> result = emitCausalRows(b, loc, tiles, error);
    if (failed(result))
      return failure();
    Value rows = tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get({ShapedType::kDynamic, width},
                              outType.getElementType()),
        *result, llvm::ArrayRef<OpFoldResult>{idx(b, 0), idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{length, idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
    b.setInsertionPointToStart(phase3.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, loc, rows, body->getArgument(3),
        llvm::ArrayRef<OpFoldResult>{bi, start, hi, idx(b, 0)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), length, idx(b, 1),
                                     idx(b, width)},
        llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                     idx(b, 1)});
  }

  finish(b, loc, phase3.getResult(0),
         llvm::SmallVector<Value>(
             carry.getResults().drop_front(carried.size())));
  return success();
}

LogicalResult ChunkRewriter::rewriteFused(std::string &error) {
  Operation *readout = info.readout;
  ScanOp scan = info.scan;
  Location loc = readout->getLoc();
  OpBuilder b(readout);
  Type f32 = b.getF32Type();
  prepareShapes();

  RankedTensorType outType = info.outputType();
  Type outElement = outType.getElementType();
  int64_t width = outType.getDimSize(3);
  bool wantFinal = !scan.getFinal().empty();
  llvm::SmallVector<Value> inits = {tensor::EmptyOp::create(
      b, loc, outType.getShape(), outType.getElementType())};
  if (wantFinal)
    for (unsigned c : carried) {
      llvm::SmallVector<int64_t> shape = {sequences, info.heads};
      llvm::append_range(shape, componentShapes[c]);
      inits.push_back(tensor::EmptyOp::create(b, loc, shape, f32));
    }
  llvm::SmallVector<unsigned> inputs = usedInputs(plan.summaries);
  for (unsigned input : usedInputs(plan.readouts))
    if (!llvm::is_contained(inputs, input))
      inputs.push_back(input);

  auto loop = scf::ForallOp::create(b, loc,
                                    {idx(b, sequences), idx(b, info.heads)},
                                    inits, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value si = body->getArgument(0), hi = body->getArgument(1);
  // Everything the chunk loop needs is built inside the (sequence, head)
  // loop, so that its body is self-contained: a GPU kernel's thread block
  // builds its own masks and slot table instead of reading the host's.
  prepareTiles(b, b, loc);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);

  // The sequence's tokens [first, first + length) and chunk slots
  // [firstSlot, endSlot); unpacked, sequence = batch entry.
  Value batch = si, first = c0, seqLength, firstSlot = c0, endSlot;
  if (cuSeqlens) {
    batch = c0;
    auto at = [&](Value table, Value i) -> Value {
      Value v = tensor::ExtractOp::create(b, loc, table, ValueRange{i});
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    Value next = arith::AddIOp::create(b, loc, si, c1);
    first = at(cuSeqlens, si);
    seqLength = arith::SubIOp::create(b, loc, at(cuSeqlens, next), first);
    firstSlot = at(chunkOffsets, si);
    endSlot = at(chunkOffsets, next);
  } else {
    seqLength = arith::ConstantIndexOp::create(b, loc, info.length);
    endSlot = arith::ConstantIndexOp::create(b, loc, numChunks);
  }
  auto rowsType = RankedTensorType::get({ShapedType::kDynamic, width},
                                        outElement);
  Value rowsOut = tensor::ExtractSliceOp::create(
      b, loc, rowsType, body->getArgument(2),
      llvm::ArrayRef<OpFoldResult>{batch, first, hi, idx(b, 0)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), seqLength, idx(b, 1),
                                   idx(b, width)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                   idx(b, 1)});
  FailureOr<scf::ForOp> chunks = emitChunkLoop(
      b, loc, batch, hi, firstSlot, endSlot, initialCarry(b, loc, si, hi),
      rowsOut, first, /*allComponents=*/false, inputs, error, si, first);
  if (failed(chunks))
    return failure();
  size_t k = carried.size();

  b.setInsertionPointToStart(loop.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, chunks->getResult(k), body->getArgument(2),
      llvm::ArrayRef<OpFoldResult>{batch, first, hi, idx(b, 0)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), seqLength, idx(b, 1),
                                   idx(b, width)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                   idx(b, 1)});
  if (wantFinal)
    for (auto [i, c] : llvm::enumerate(carried))
      insertComponent(b, loc, chunks->getResult(i), body->getArgument(3 + i),
                      c, {si, hi});

  finish(b, loc, loop.getResult(0),
         llvm::SmallVector<Value>(loop.getResults().drop_front()));
  return success();
}

LogicalResult ChunkRewriter::rewriteSegmented(int64_t segments,
                                              std::string &error) {
  Operation *readout = info.readout;
  ScanOp scan = info.scan;
  Location loc = readout->getLoc();
  OpBuilder b(readout);
  Type f32 = b.getF32Type();
  prepareShapes();
  if (cuSeqlens) {
    error = "the segmented form does not take packed sequences (cu_seqlens); "
            "use the fused form";
    return failure();
  }
  // Segments of equal numbers of chunks, none empty.
  int64_t perSegment = (numChunks + std::max<int64_t>(segments, 1) - 1) /
                       std::max<int64_t>(segments, 1);
  segments = (numChunks + perSegment - 1) / perSegment;

  RankedTensorType outType = info.outputType();
  Type outElement = outType.getElementType();
  int64_t width = outType.getDimSize(3);
  bool wantFinal = !scan.getFinal().empty();
  auto segmentBounds = [&](OpBuilder &nb, Value s) {
    Value per = arith::ConstantIndexOp::create(nb, loc, perSegment);
    Value lo = arith::MulIOp::create(nb, loc, s, per);
    Value hi = arith::MinSIOp::create(
        nb, loc, arith::AddIOp::create(nb, loc, lo, per),
        arith::ConstantIndexOp::create(nb, loc, numChunks));
    return std::make_pair(lo, hi);
  };

  // 1. Every segment's summary, folded from the identity (every component:
  //    combining segments needs them all).
  llvm::SmallVector<Value> sumInits;
  for (unsigned c = 0; c < spec.components.size(); ++c)
    sumInits.push_back(emptyPerRun(b, loc, c, segments));
  auto summarize = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, segments), idx(b, info.heads)},
      sumInits, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = summarize.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), si = body->getArgument(1),
          hi = body->getArgument(2);
    prepareTiles(b, b, loc);
    auto [lo, end] = segmentBounds(b, si);
    llvm::SmallVector<Value> identity;
    for (unsigned c = 0; c < spec.components.size(); ++c)
      identity.push_back(buildMonoidIdentity(
          b, loc, spec, c, RankedTensorType::get(componentShapes[c], f32)));
    FailureOr<scf::ForOp> chunks =
        emitChunkLoop(b, loc, bi, hi, lo, end, identity, Value(), Value(),
                      /*allComponents=*/true, usedInputs(plan.summaries),
                      error);
    if (failed(chunks))
      return failure();
    b.setInsertionPointToStart(summarize.getTerminator().getBody());
    for (unsigned c = 0; c < spec.components.size(); ++c)
      insertComponent(b, loc, chunks->getResult(c), body->getArgument(3 + c),
                      c, {bi, si, hi});
  }

  // 2. Every segment's outputs, from the state its predecessors leave.
  llvm::SmallVector<Value> inits = {tensor::EmptyOp::create(
      b, loc, outType.getShape(), outElement)};
  if (wantFinal)
    for (unsigned c : carried)
      inits.push_back(emptyPerRun(b, loc, c, segments));
  llvm::SmallVector<unsigned> inputs = usedInputs(plan.summaries);
  for (unsigned input : usedInputs(plan.readouts))
    if (!llvm::is_contained(inputs, input))
      inputs.push_back(input);
  llvm::SmallVector<Type> summaryTypes = componentTypes(b);
  auto readoutLoop = scf::ForallOp::create(
      b, loc, {idx(b, info.batch), idx(b, segments), idx(b, info.heads)},
      inits, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = readoutLoop.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), si = body->getArgument(1),
          hi = body->getArgument(2);
    prepareTiles(b, b, loc);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    size_t k = carried.size();
    auto before = scf::ForOp::create(
        b, loc, c0, si, c1, initialCarry(b, loc, bi, hi),
        [&](OpBuilder &nb, Location l, Value previous, ValueRange carry) {
          llvm::SmallVector<Value> summary;
          for (unsigned c = 0; c < spec.components.size(); ++c)
            summary.push_back(componentSlice(nb, l, summarize.getResult(c), c,
                                             {bi, previous, hi}));
          llvm::SmallVector<Value> next = ::mlir::hla::combineCarried(
              nb, l, scan.getMonoid(), carry, summary, summaryTypes);
          for (size_t i = 0; i < k; ++i)
            next[i] = linalg::CopyOp::create(nb, l, next[i], carry[i])
                          .getResult(0);
          scf::YieldOp::create(nb, l, next);
        });
    auto [lo, end] = segmentBounds(b, si);
    Value c = arith::ConstantIndexOp::create(b, loc, chunk);
    Value first = arith::MulIOp::create(b, loc, lo, c);
    Value last = arith::MinSIOp::create(
        b, loc, arith::MulIOp::create(b, loc, end, c),
        arith::ConstantIndexOp::create(b, loc, info.length));
    Value length = arith::SubIOp::create(b, loc, last, first);
    auto rowsType = RankedTensorType::get({ShapedType::kDynamic, width},
                                          outElement);
    llvm::SmallVector<OpFoldResult> offsets = {bi, first, hi, idx(b, 0)};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), length, idx(b, 1),
                                             idx(b, width)};
    llvm::SmallVector<OpFoldResult> strides(4, idx(b, 1));
    Value rowsOut = tensor::ExtractSliceOp::create(
        b, loc, rowsType, body->getArgument(3), offsets, sizes, strides);
    FailureOr<scf::ForOp> chunks = emitChunkLoop(
        b, loc, bi, hi, lo, end, llvm::SmallVector<Value>(before.getResults()),
        rowsOut,
        first, /*allComponents=*/false, inputs, error);
    if (failed(chunks))
      return failure();
    b.setInsertionPointToStart(readoutLoop.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, chunks->getResult(k),
                                          body->getArgument(3), offsets, sizes,
                                          strides);
    if (wantFinal)
      for (auto [i, comp] : llvm::enumerate(carried))
        insertComponent(b, loc, chunks->getResult(i), body->getArgument(4 + i),
                        comp, {bi, si, hi});
  }

  // The final state is the last segment's, copied out per (batch entry,
  // head) by a loop of its own: on a GPU the copy is a kernel, not a host
  // access to device memory.
  llvm::SmallVector<Value> finalStates;
  if (wantFinal) {
    llvm::SmallVector<Value> finalInits;
    for (unsigned c : carried) {
      llvm::SmallVector<int64_t> shape = {info.batch, info.heads};
      llvm::append_range(shape, componentShapes[c]);
      finalInits.push_back(tensor::EmptyOp::create(b, loc, shape, f32));
    }
    auto copyOut = scf::ForallOp::create(
        b, loc, {idx(b, info.batch), idx(b, info.heads)}, finalInits,
        std::nullopt);
    {
      OpBuilder::InsertionGuard guard(b);
      Block *body = copyOut.getBody();
      b.setInsertionPointToStart(body);
      Value bi = body->getArgument(0), hi = body->getArgument(1);
      llvm::SmallVector<Value> states;
      for (auto [i, c] : llvm::enumerate(carried))
        states.push_back(componentSlice(b, loc, readoutLoop.getResult(1 + i),
                                        c, {bi, idx(b, segments - 1), hi}));
      b.setInsertionPointToStart(copyOut.getTerminator().getBody());
      for (auto [i, c] : llvm::enumerate(carried))
        insertComponent(b, loc, states[i], body->getArgument(2 + i), c,
                        {bi, hi});
    }
    finalStates = llvm::SmallVector<Value>(copyOut.getResults());
  }
  finish(b, loc, readoutLoop.getResult(0), finalStates);
  return success();
}

/// LinSimp with `kernel = exact` (SEMANTICS.md §5): no finite state, so
/// no scan — every chunk of queries runs, per anchor offset w, over the key
/// chunks up to its own, with one softmax per query over all its (j, c)
/// pairs kept online (a running maximum, rescaled sums): quadratic in T.
static LogicalResult lowerExactLinSimp(LinSimpOp op, int64_t chunk,
                                       std::string &error) {
  if (op.getCuSeqlens() || !op.getInitialState().empty()) {
    error = "LinSimp's exact kernel takes no packed sequences or state";
    return failure();
  }
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  auto vType = cast<RankedTensorType>(op.getValue().getType());
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  for (RankedTensorType t : {qType, vType, outType})
    if (!t.hasStaticShape() || t.getRank() != 4) {
      error = "the chunked lowering needs static [B, T, H, ...] shapes";
      return failure();
    }
  int64_t batch = qType.getDimSize(0), length = qType.getDimSize(1),
          heads = qType.getDimSize(2), d = qType.getDimSize(3),
          dv = vType.getDimSize(3), window = op.getWindow();
  int64_t before = window - 1, c = chunk;
  int64_t chunks = (length + c - 1) / c;
  double tau = cast<AttentionOpInterface>(op.getOperation()).getEffectiveScale();
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
    Value kvHead = groups == 1 ? hi
                               : Value(arith::DivUIOp::create(
                                     nb, l, hi, cst(nb, l, groups)));
    Value lo = arith::MaxSIOp::create(nb, l, first, cst(nb, l, 0));
    Value hiRow = arith::MinSIOp::create(
        nb, l, arith::AddIOp::create(nb, l, first, cst(nb, l, rows)),
        cst(nb, l, length));
    Value count = arith::MaxSIOp::create(
        nb, l, arith::SubIOp::create(nb, l, hiRow, lo), cst(nb, l, 0));
    Value at = arith::SubIOp::create(nb, l, lo, first);
    Type element = type.getElementType();
    Value slice = tensor::ExtractSliceOp::create(
        nb, l, RankedTensorType::get({ShapedType::kDynamic, width}, element),
        x, llvm::ArrayRef<OpFoldResult>{bi, lo, kvHead, idx(nb, 0)},
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
  AffineMap id1 = b.getMultiDimIdentityMap(1), id2 = b.getMultiDimIdentityMap(2);
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
  Value mu =
      linalg::FillOp::create(b, loc, fcst(b, loc, lowest), tb.empty({c}))
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
                        eb, el, arith::SubFOp::create(eb, el, args[0], args[1]));
                  });
              Value weights = kt.generic(
                  {scores, next}, kt.empty({c, c}), {id2, rows2, id2},
                  {IT::parallel, IT::parallel},
                  [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                    Value e = math::ExpOp::create(
                        eb, el, arith::SubFOp::create(eb, el, args[0], args[1]));
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
                    Value term = arith::MulFOp::create(eb, el, args[0], args[1]);
                    Value kept = arith::SelectOp::create(
                        eb, el, inside(eb, el, 2), term, fcst(eb, el, 0.0));
                    return arith::AddFOp::create(eb, el, args[2], kept);
                  });
              Value num = kt.add(kt.scaleRows(inner[0], rescale),
                                 kt.mul(u, weighted));
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
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1),
                                   idx(b, 1)});
  op.getOutput().replaceAllUsesWith(loop.getResult(0));
  op.erase();
  return success();
}

struct HLAChunkPass : public hla::impl::HLAChunkPassBase<HLAChunkPass> {
  using HLAChunkPassBase::HLAChunkPassBase;

  void runOnOperation() override {
    if (form != "phased" && form != "fused" && form != "segmented") {
      getOperation()->emitError()
          << "hla-chunk: form must be phased, fused or segmented, got '"
          << form << "'";
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
    llvm::SmallVector<LinSimpOp> exact;
    getOperation()->walk([&](LinSimpOp op) {
      if (op.getKernel() == FeatureKernel::exact)
        exact.push_back(op);
    });
    for (LinSimpOp op : exact) {
      std::string error;
      if (failed(lowerExactLinSimp(op, chunkSize, error))) {
        op.emitError() << "hla-chunk: " << error;
        return signalPassFailure();
      }
    }
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
    MonoidAttr monoid = info.anchor
                            ? info.anchor.getMonoid()
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
    if (info.scan.getMonoid() != monoid ||
        info.segment.getMonoid() != monoid)
      return fail("segment, scan and readout must share one monoid");
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

    std::string error;
    // The gated delta rule (the library's `kda` monoid): a matrix-valued
    // transition, chunked in the WY/UT form rather than by an index plan.
    const MonoidSpec &monoidSpec = monoid.getSpec();
    bool deltaRule =
        monoidSpec.name == "kda" && monoidSpec.findComponent("M") &&
        monoidSpec.components[*monoidSpec.findComponent("M")].eyeIdentity &&
        monoidSpec.findComponent("S") && monoidSpec.components.size() == 2 &&
        llvm::all_of(llvm::ArrayRef<llvm::StringRef>{"q", "k", "v", "g",
                                                     "beta"},
                     [&](llvm::StringRef n) {
                       return monoidSpec.findInput(n).has_value();
                     });
    FailureOr<ChunkPlan> plan = ChunkPlan();
    if (!deltaRule)
      plan = buildChunkPlan(monoidSpec, error);
    if (failed(plan))
      return fail(error);
    ChunkRewriter rewriter(info, chunkSize, *plan);
    rewriter.stableFeatures = stableFeatures;
    rewriter.deltaRule = deltaRule;
    rewriter.causalIsolation = causalIsolation;
    LogicalResult rewritten = failure();
    if (form == "fused") {
      rewritten = rewriter.rewriteFused(error);
    } else if (form == "segmented") {
      // By default the count with the least modelled time: `parallelism`
      // iterations run at once, so S runs take ceil(lanes * S / parallelism)
      // waves of 1/S of a sequence each, and a segmented chunk costs about
      // 1.5 fused ones (its summary pass; measured 1.52 on an H200). At
      // least two chunks per run; packed sequences keep the fused form.
      int64_t count = segments;
      if (count == 0 && info.scan.getCuSeqlens()) {
        count = 1;
      } else if (count == 0) {
        int64_t lanes = info.batch * info.heads;
        int64_t chunks = (info.length + chunkSize - 1) / chunkSize;
        auto cost = [&](int64_t s) {
          double waves = double((lanes * s + parallelism - 1) / parallelism);
          return waves * (s == 1 ? 1.0 : 1.5) / double(s);
        };
        count = 1;
        for (int64_t s = 2; s <= std::max<int64_t>(chunks / 2, 1); ++s)
          if (cost(s) < cost(count))
            count = s;
      }
      rewritten = count == 1 ? rewriter.rewriteFused(error)
                             : rewriter.rewriteSegmented(count, error);
    } else {
      rewritten = rewriter.rewritePhased(error);
    }
    if (failed(rewritten))
      return fail(error);
    return success();
  }

  static const MonoidSpec &spec(ReadoutOp op) {
    return op.getMonoid().getSpec();
  }
};
} // namespace
