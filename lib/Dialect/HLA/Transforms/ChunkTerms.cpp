//===- ChunkTerms.cpp - Index terms as masked products on tiles -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One index term of the chunk plan (ChunkPlan.h) is a tensor network over
// the chunk's positions; TermEmitter sums its internal indices out by c x c
// matrix products, with the decay-weighted triangular masks of DecayTiles.
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"

#include "llvm/ADT/bit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;
using utils::IteratorType;

//===----------------------------------------------------------------------===//
// Decay tiles
//===----------------------------------------------------------------------===//

/// exp(w · log γ · n) for an index n: log γ the constant, or `logArg` (a
/// block argument) per head.
static Value weightOf(OpBuilder &b, Location l, Value n, double w,
                      double logGamma, Value logArg) {
  if (!logArg || w == 0.0)
    return DecayTiles::decayOf(b, l, n, logArg ? 0.0 : w * logGamma);
  Value asInt = arith::IndexCastOp::create(b, l, b.getI64Type(), n);
  Value asFloat = arith::SIToFPOp::create(b, l, b.getF32Type(), asInt);
  Value rate = arith::MulFOp::create(
      b, l, logArg, arith::ConstantOp::create(b, l, b.getF32FloatAttr(w)));
  return math::ExpOp::create(b, l, arith::MulFOp::create(b, l, asFloat, rate));
}

Value DecayTiles::build(
    TileBuilder &at, const ChunkTiles &tiles, llvm::ArrayRef<int64_t> shape,
    llvm::function_ref<Value(OpBuilder &, Location,
                             llvm::function_ref<Value(Value, double)>)>
        body) {
  OpBuilder &b = at.getBuilder();
  unsigned rank = shape.size();
  llvm::SmallVector<Value> inputs;
  llvm::SmallVector<AffineMap> maps;
  if (perHead) {
    inputs.push_back(tiles.logDecay);
    maps.push_back(AffineMap::get(rank, 0, {}, b.getContext()));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  llvm::SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  return at.generic(inputs, at.empty(shape), maps, iterators,
                    [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      Value logArg = perHead ? args[0] : Value();
                      return body(nb, l, [&](Value n, double w) {
                        return weightOf(nb, l, n, w, logGamma, logArg);
                      });
                    });
}

Value DecayTiles::tile(TileBuilder &here, const ChunkTiles &tiles,
                       const std::string &key,
                       llvm::function_ref<Value(TileBuilder &)> make) {
  // Constant rate: one tile for the whole lowering, at the hoisting point.
  // Per head: one per chunk's log rate, reused within the block that
  // built it (a tile first asked for in one branch must not serve another).
  auto slot = std::make_pair(
      perHead ? tiles.logDecay.getAsOpaquePointer() : nullptr, key);
  auto it = built.find(slot);
  if (it != built.end() &&
      (!perHead ||
       it->second.getParentBlock() == here.getBuilder().getInsertionBlock()))
    return it->second;
  Value result = make(perHead ? here : tb);
  built[slot] = result;
  return result;
}

/// M[p][v] = γ^{w (p − v)} for v ≤ p (v < p when strict), else 0.
Value DecayTiles::mask(TileBuilder &here, const ChunkTiles &tiles, double w,
                       bool strict, int64_t repeat) {
  std::string key = "mask " + std::to_string(llvm::bit_cast<uint64_t>(w)) +
                    " " + std::to_string(strict) + " " + std::to_string(repeat);
  return tile(here, tiles, key, [&](TileBuilder &at) {
    return build(
        at, tiles, {repeat * chunk, chunk},
        [&](OpBuilder &nb, Location l,
            llvm::function_ref<Value(Value, double)> weight) -> Value {
          Value p =
              positionOf(nb, l, linalg::IndexOp::create(nb, l, 0), repeat);
          Value v = linalg::IndexOp::create(nb, l, 1);
          Value diff = arith::SubIOp::create(nb, l, p, v);
          Value zero = arith::ConstantIndexOp::create(nb, l, 0);
          Value inside = arith::CmpIOp::create(
              nb, l,
              strict ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::sge,
              diff, zero);
          Value zeroF = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
          return arith::SelectOp::create(nb, l, inside, weight(diff, w), zeroF);
        });
  });
}

Value DecayTiles::fromStart(TileBuilder &here, const ChunkTiles &tiles,
                            double w, int64_t repeat) {
  std::string key = "start " + std::to_string(llvm::bit_cast<uint64_t>(w)) +
                    " " + std::to_string(repeat);
  return tile(here, tiles, key, [&](TileBuilder &at) {
    return build(at, tiles, {repeat * chunk},
                 [&](OpBuilder &nb, Location l,
                     llvm::function_ref<Value(Value, double)> weight) -> Value {
                   Value v = positionOf(
                       nb, l, linalg::IndexOp::create(nb, l, 0), repeat);
                   Value one = arith::ConstantIndexOp::create(nb, l, 1);
                   return weight(arith::AddIOp::create(nb, l, v, one), w);
                 });
  });
}

Value DecayTiles::endWeights(TileBuilder &here, const ChunkTiles &tiles,
                             double w, bool strict) {
  // Depends on the chunk's length: built where it is used.
  Value length = tiles.length;
  return build(
      here, tiles, {chunk},
      [&](OpBuilder &nb, Location l,
          llvm::function_ref<Value(Value, double)> weight) -> Value {
        Value v = linalg::IndexOp::create(nb, l, 0);
        Value one = arith::ConstantIndexOp::create(nb, l, 1);
        Value last = arith::SubIOp::create(nb, l, length, one);
        Value diff = arith::SubIOp::create(nb, l, last, v);
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        Value inside = arith::CmpIOp::create(nb, l,
                                             strict ? arith::CmpIPredicate::sgt
                                                    : arith::CmpIPredicate::sge,
                                             diff, zero);
        Value zeroF = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
        return arith::SelectOp::create(nb, l, inside, weight(diff, w), zeroF);
      });
}

Value DecayTiles::lengthWeight(TileBuilder &here, const ChunkTiles &tiles,
                               double w) {
  OpBuilder &b = here.getBuilder();
  Location l = here.getLoc();
  if (!perHead) {
    Value weight = decayOf(b, l, tiles.length, w * logGamma);
    return tensor::FromElementsOp::create(
        b, l, RankedTensorType::get({}, b.getF32Type()), ValueRange{weight});
  }
  Value length = tiles.length;
  return build(here, tiles, {},
               [&](OpBuilder &, Location,
                   llvm::function_ref<Value(Value, double)> weight) -> Value {
                 return weight(length, w);
               });
}

double DecayTiles::constantFactor(TileBuilder &here, const ChunkTiles &tiles,
                                  double c, Value &scalar) {
  scalar = Value();
  if (!perHead)
    return std::exp(c * logGamma);
  if (c != 0.0) {
    OpBuilder &b = here.getBuilder();
    Value one = arith::ConstantIndexOp::create(b, here.getLoc(), 1);
    scalar =
        build(here, tiles, {},
              [&](OpBuilder &, Location,
                  llvm::function_ref<Value(Value, double)> weight) -> Value {
                return weight(one, c);
              });
  }
  return 1.0;
}

Value DecayTiles::positionOf(OpBuilder &b, Location l, Value row,
                             int64_t repeat) const {
  if (repeat == 1)
    return row;
  return arith::RemUIOp::create(b, l, row,
                                arith::ConstantIndexOp::create(b, l, chunk));
}

Value DecayTiles::decayOf(OpBuilder &b, Location l, Value n, double rate) {
  // No decay: e^(n * 0) is 1 for every (finite) n; folding x * 0.0 is not
  // legal in general, so it is done here, where n is a token count.
  if (rate == 0.0)
    return arith::ConstantOp::create(b, l, b.getF32FloatAttr(1.0f));
  Value asInt = arith::IndexCastOp::create(b, l, b.getI64Type(), n);
  Value asFloat = arith::SIToFPOp::create(b, l, b.getF32Type(), asInt);
  Value scaled = arith::MulFOp::create(
      b, l, asFloat, arith::ConstantOp::create(b, l, b.getF32FloatAttr(rate)));
  return math::ExpOp::create(b, l, scaled);
}

Value DecayTiles::loadLogDecay(OpBuilder &b, Location loc, Value rates,
                               Value head) {
  // rates[head] as a 0-d slice, then its log: ops reverse differentiation
  // follows (ReverseDiff.h) and every thread of a register-tile kernel
  // reads and computes.
  Value scalar = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({}, b.getF32Type()), rates,
      ArrayRef<OpFoldResult>{head}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  TileBuilder tb(b, loc);
  return tb.generic({scalar}, tb.empty({}),
                    {b.getMultiDimIdentityMap(0), b.getMultiDimIdentityMap(0)},
                    {},
                    [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      return math::LogOp::create(nb, l, args[0]);
                    });
}

//===----------------------------------------------------------------------===//
// Term emission
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Term emission
//===----------------------------------------------------------------------===//

namespace {

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

  Value ones(int64_t rows) {
    Value &tile = onesTiles[rows];
    if (!tile) {
      OpBuilder &b = tb.getBuilder();
      tile = linalg::FillOp::create(b, tb.getLoc(), tb.scalar(1.0),
                                    tb.empty({rows}))
                 .getResult(0);
    }
    return tile;
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
  std::map<int64_t, Value> onesTiles;
};

} // namespace

FailureOr<TermEmitter::TermValue> TermEmitter::emit(const IndexTerm &term,
                                                    bool isSummary) {
  std::vector<ChainFactor> scalarFactors;
  std::string error;
  FailureOr<std::vector<ChainPiece>> pieces =
      splitChain(spec, term, scalarFactors, error);
  if (failed(pieces))
    return chunkError(anchor) << error;
  FailureOr<DecayPlan> decayPlan = planDecay(term, error);
  if (failed(decayPlan))
    return chunkError(anchor) << error;

  int64_t c = tiles.chunk;
  // Readout rows stacked `repeat` times (ChunkTiles::readoutRepeat): the
  // readout index runs over repeat · c rows; its masks and weights repeat.
  int64_t repeat = isSummary ? 1 : tiles.readoutRepeat;
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
          return chunkError(anchor)
                 << "a chain of carried matrices without a token";
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

  // Indices that index a token tile: such a tile's rows past the chunk's
  // length are zeros (ChunkRewriter::loadTile), and so is every product
  // along that index there.
  llvm::SmallDenseSet<int> tokenIndices;
  for (const ChainPiece &piece : *pieces)
    for (int var : {piece.firstVar, piece.lastVar})
      if (var >= 0)
        tokenIndices.insert(var);
  for (const ChainFactor &f : scalarFactors)
    if (f.kind == ChainFactor::Kind::Token)
      tokenIndices.insert(f.var);
  if (repeat > 1) {
    // Only the readout's own inputs are stacked: a token tile read at the
    // readout index must have the stacked rows.
    auto stacked = [&](const ChainFactor &f) {
      return cast<RankedTensorType>(tokenTile(f).getType()).getDimSize(0) ==
             repeat * c;
    };
    bool ok = true;
    for (const ChainPiece &piece : *pieces) {
      if (piece.firstVar == 0)
        ok &= stacked(piece.factors.front());
      if (piece.lastVar == 0)
        ok &= stacked(piece.factors.back());
    }
    for (const ChainFactor &f : scalarFactors)
      if (f.kind == ChainFactor::Kind::Token && f.var == 0)
        ok &= stacked(f);
    for (const IndexVar &var : term.vars)
      ok &= var.parent != 0 || (!var.later && !var.atEnd);
    if (!ok)
      return chunkError(anchor)
             << "stacked readout rows need every input at the readout "
                "index stacked and no later or chunk-end index after it";
  }

  // The index tree with its decay: masks between indices, weights from the
  // chunk's start, and (summaries) weights to the chunk's end. Without
  // decay the end weights of a token index are 1 up to the chunk's end and
  // 0 past it, which its tiles already are: left out (a tile fewer for
  // every summary, and the token tile itself stays an operand).
  //
  // Backward terms (ChunkVjp.h) also have later variables: their mask is
  // the transposed one, and where no token tile zeroes the positions past
  // the chunk's length, a validity vector does. A variable pinned to the
  // chunk's last token is no index: its edge is a weight on its parent.
  for (size_t v = 1; v < term.vars.size(); ++v) {
    const IndexVar &var = term.vars[v];
    int p = var.parent;
    bool strict = var.strict;
    double w = decayPlan->edge[v];
    if (var.atEnd) {
      if (!var.later || tokenIndices.contains(int(v)) ||
          llvm::any_of(term.vars,
                       [&](const IndexVar &o) { return o.parent == int(v); }))
        return chunkError(anchor)
               << "a term's chunk-end variable must be a leaf after its "
                  "parent without token factors";
      net.addUnary(p, decay.endWeights(tb, tiles, w, strict));
    } else if (isSummary && p == 0) {
      if (w != 0.0 || strict || !tokenIndices.contains(int(v)))
        net.addUnary(v, decay.endWeights(tb, tiles, w, strict));
    } else if (var.later) {
      net.addPair(v, p, decay.mask(tb, tiles, w, strict));
      if (!tokenIndices.contains(int(v)))
        net.addUnary(v, decay.endWeights(tb, tiles, 0.0, false));
    } else {
      net.addPair(p, v, decay.mask(tb, tiles, w, strict, p == 0 ? repeat : 1));
    }
  }
  for (size_t v = 0; v < term.vars.size(); ++v) {
    double u = decayPlan->fromStart[v];
    if (u == 0.0)
      continue;
    if ((isSummary && v == 0) || term.vars[v].atEnd)
      net.addScalar(decay.lengthWeight(tb, tiles, u));
    else
      net.addUnary(v, decay.fromStart(tb, tiles, u, v == 0 ? repeat : 1));
  }
  Value constantScalar;
  double coeff =
      term.coeff *
      decay.constantFactor(tb, tiles, decayPlan->constant, constantScalar);
  if (constantScalar)
    net.addScalar(constantScalar);

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
    if (!llvm::is_contained(keep, int(v)) && !term.vars[v].atEnd)
      internal.push_back(v);
  while (!internal.empty()) {
    // The index with the fewest neighbours first.
    auto best = llvm::min_element(internal, [&](int a, int b) {
      return net.neighbors(a).size() < net.neighbors(b).size();
    });
    if (failed(net.eliminate(*best, c))) {
      return chunkError(anchor)
             << "an index of the term touches three others; its chunked "
                "form would need a three-index intermediate";
    }
    internal.erase(best);
  }

  auto unaryOrOnes = [&](int v) {
    Value u = net.getUnary(v);
    return u ? u : net.ones(v == 0 ? repeat * c : c);
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
      // diag(u₀) (W diag(u_r)) R times the scalars: every factor but R
      // goes on the left, so that terms with the same R share the product.
      Value w = net.getPair(0, rightVar);
      if (Value ur = net.getUnary(rightVar))
        w = tb.scaleCols(w, ur);
      if (ut)
        w = tb.scaleRows(w, ut);
      return TermValue(net.applyScalars(w, coeff), rightTile);
    } else {
      Value sumRight = tb.matvec(rightTile, unaryOrOnes(rightVar), true);
      result = tb.outer(unaryOrOnes(0), sumRight);
    }
    return TermValue(net.applyScalars(result, coeff));
  }

  // Summaries: Lᵀ · (weights between l and r) · R.
  if (!left && !right) {
    // No chain at all: the value is the product of the scalars.
    result = linalg::FillOp::create(tb.getBuilder(), tb.getLoc(),
                                    tb.scalar(1.0), tb.empty({}))
                 .getResult(0);
    return TermValue(net.applyScalars(result, coeff));
  }
  if (!left) {
    return chunkError(anchor)
           << "a summary chain that does not start with a column";
  }
  Value leftSum, rightSum;
  if (leftVar >= 0 && rightVar >= 0 && leftVar == rightVar) {
    Value l = leftTile;
    if (Value ul = net.getUnary(leftVar))
      l = tb.scaleRows(l, ul);
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
  return TermValue(net.applyScalars(result, coeff));
}

//===----------------------------------------------------------------------===//
// Sums of terms
//===----------------------------------------------------------------------===//

FailureOr<Value> mlir::hla::chunk::emitTermSum(
    TileBuilder &tb, const MonoidSpec &spec, const ChunkTiles &tiles,
    DecayTiles &decay, Operation *anchor, llvm::ArrayRef<IndexTerm> terms,
    bool isSummary, llvm::ArrayRef<int64_t> shape) {
  TermEmitter emitter(tb, spec, tiles, decay, anchor);
  Value sum;
  auto accumulate = [&](Value v) { sum = sum ? tb.add(sum, v) : v; };
  // Terms left as left · right, by right factor: Σ Lᵢ · R = (Σ Lᵢ) · R.
  llvm::SmallVector<std::pair<Value, Value>> byRight;
  for (const IndexTerm &term : terms) {
    FailureOr<TermEmitter::TermValue> value = emitter.emit(term, isSummary);
    if (failed(value))
      return failure();
    if (!value->right) {
      accumulate(value->value);
      continue;
    }
    auto *group = llvm::find_if(
        byRight, [&](auto &g) { return g.second == value->right; });
    if (group == byRight.end())
      byRight.push_back({value->left, value->right});
    else
      group->first = tb.add(group->first, value->left);
  }
  for (auto [left, right] : byRight)
    accumulate(tb.matmul(left, right));
  return sum ? sum : tb.zeros(shape);
}

FailureOr<llvm::SmallVector<Value>> mlir::hla::chunk::emitChunkSummaries(
    OpBuilder &b, Location loc, const MonoidSpec &spec, const ChunkPlan &plan,
    const ChunkTiles &tiles, DecayTiles &decay, Operation *anchor,
    llvm::ArrayRef<llvm::SmallVector<int64_t>> componentShapes) {
  TileBuilder tb(b, loc);
  llvm::SmallVector<Value> values(spec.components.size());
  for (const PlannedOutput &out : plan.summaries) {
    FailureOr<Value> v = emitTermSum(tb, spec, tiles, decay, anchor, out.terms,
                                     true, componentShapes[out.index]);
    if (failed(v))
      return failure();
    values[out.index] = *v;
  }
  // Decay components: γ^length.
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    if (values[c])
      continue;
    values[c] = decay.lengthWeight(tb, tiles, 1.0);
  }
  return values;
}
