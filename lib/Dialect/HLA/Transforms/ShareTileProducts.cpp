//===- ShareTileProducts.cpp - One product per value in a chunk body ------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-share-tile-products (Passes.td): transposes folded into their readers,
// then every generic replaced by an earlier one computing the same values.
// The chunk plan emits each index term on its own, so this is where the
// products that several terms share become one.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/Hashing.h"

#include <numeric>
#include <unordered_map>

namespace mlir::hla {
#define GEN_PASS_DEF_HLASHARETILEPRODUCTSPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;

namespace {

/// A generic on tensors with one result whose maps are projected
/// permutations: the ops this pass reasons about.
bool isPlainTensorGeneric(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1)
    return false;
  return llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) {
    return m.isProjectedPermutation(/*allowZeroInResults=*/false);
  });
}

/// Whether `op` only permutes its one input: out[outMap(p)] = in[inMap(p)].
bool isTranspose(linalg::GenericOp op) {
  if (!isPlainTensorGeneric(op) || op.getNumDpsInputs() != 1 ||
      op.getNumLoops() != op.getNumParallelLoops())
    return false;
  AffineMap in = op.getIndexingMapsArray()[0];
  AffineMap out = op.getIndexingMapsArray()[1];
  if (!in.isPermutation() || !out.isPermutation() || in == out)
    return false;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 &&
         yield.getValues()[0] == body.getArgument(0);
}

/// Reads through transposes: every input of `op` produced by a transpose
/// is replaced by the transpose's input, read through the composed map.
bool foldTransposedInputs(linalg::GenericOp op) {
  if (!isPlainTensorGeneric(op))
    return false;
  bool changed = false;
  llvm::SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (OpOperand *operand : op.getDpsInputOperands()) {
    auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
    if (!producer || !isTranspose(producer))
      continue;
    AffineMap in = producer.getIndexingMapsArray()[0];
    AffineMap out = producer.getIndexingMapsArray()[1];
    unsigned index = operand->getOperandNumber();
    // X[y] = in[inMap(outMap⁻¹(y))] for X the transpose's result.
    maps[index] = in.compose(inversePermutation(out)).compose(maps[index]);
    operand->set(producer.getDpsInputOperand(0)->get());
    changed = true;
  }
  if (changed)
    op.setIndexingMapsAttr(OpBuilder(op).getAffineMapArrayAttr(maps));
  return changed;
}

/// The value every element of `init` holds, if it is a fill.
std::optional<Attribute> fillValue(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  Attribute value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return std::nullopt;
  return value;
}

/// `map` with loop d renamed to loops[d].
AffineMap renameLoops(AffineMap map, llvm::ArrayRef<unsigned> loops) {
  llvm::SmallVector<AffineExpr> dims;
  for (unsigned d : loops)
    dims.push_back(getAffineDimExpr(d, map.getContext()));
  return map.replaceDimsAndSymbols(dims, {}, map.getNumDims(), 0);
}

/// Whether the bodies compute the same value when `later`'s input i is
/// `earlier`'s input inputs[i] and its loop d is earlier's loops[d].
bool sameBody(linalg::GenericOp earlier, linalg::GenericOp later,
              llvm::ArrayRef<unsigned> inputs, llvm::ArrayRef<unsigned> loops) {
  Block &a = later.getRegion().front(), &b = earlier.getRegion().front();
  if (a.getOperations().size() != b.getOperations().size())
    return false;
  llvm::DenseMap<Value, Value> same;
  for (auto [i, j] : llvm::enumerate(inputs))
    same[a.getArgument(i)] = b.getArgument(j);
  unsigned out = inputs.size();
  same[a.getArgument(out)] = b.getArgument(out);
  auto check = [&](Value x, Value y) {
    auto it = same.find(x);
    // Values from outside the bodies must be the very same.
    return success(it == same.end() ? x == y : it->second == y);
  };
  auto mark = [&](Value x, Value y) { same[x] = y; };
  auto commutative = [&](ValueRange xs, ValueRange ys) {
    if (xs.size() != ys.size())
      return failure();
    llvm::SmallVector<Value> left;
    for (Value x : xs) {
      auto it = same.find(x);
      left.push_back(it == same.end() ? x : it->second);
    }
    llvm::SmallVector<Value> right(ys.begin(), ys.end());
    auto order = [](Value p, Value q) {
      return p.getAsOpaquePointer() < q.getAsOpaquePointer();
    };
    llvm::sort(left, order);
    llvm::sort(right, order);
    return success(left == right);
  };
  for (auto [x, y] : llvm::zip(a, b)) {
    auto ix = dyn_cast<linalg::IndexOp>(x);
    auto iy = dyn_cast<linalg::IndexOp>(y);
    if (ix || iy) {
      if (!ix || !iy || loops[ix.getDim()] != iy.getDim())
        return false;
      same[ix.getResult()] = iy.getResult();
      continue;
    }
    if (!OperationEquivalence::isEquivalentTo(
            &x, &y, check, mark, OperationEquivalence::IgnoreLocations,
            commutative))
      return false;
  }
  return true;
}

enum class Match { None, Same, Transposed };

/// Whether `later` computes `earlier`'s values, or their transpose.
Match matchGenerics(linalg::GenericOp earlier, linalg::GenericOp later) {
  unsigned numLoops = later.getNumLoops();
  unsigned numInputs = later.getNumDpsInputs();
  if (earlier.getNumLoops() != numLoops ||
      earlier.getNumDpsInputs() != numInputs || numLoops > 4 || numInputs > 3)
    return Match::None;
  auto earlierType = cast<RankedTensorType>(earlier->getResult(0).getType());
  auto laterType = cast<RankedTensorType>(later->getResult(0).getType());
  if (earlierType.getElementType() != laterType.getElementType() ||
      earlierType.getRank() != laterType.getRank())
    return Match::None;

  // Ops that read their output must start from the same values.
  Block &laterBody = later.getRegion().front();
  Block &earlierBody = earlier.getRegion().front();
  bool readsOutput = !laterBody.getArgument(numInputs).use_empty() ||
                     !earlierBody.getArgument(numInputs).use_empty();
  Value laterInit = later.getDpsInitOperand(0)->get();
  Value earlierInit = earlier.getDpsInitOperand(0)->get();
  std::optional<Attribute> laterFill = fillValue(laterInit);
  std::optional<Attribute> earlierFill = fillValue(earlierInit);
  bool equalFills = laterFill && earlierFill && *laterFill == *earlierFill;

  llvm::SmallVector<AffineMap> laterMaps = later.getIndexingMapsArray();
  llvm::SmallVector<AffineMap> earlierMaps = earlier.getIndexingMapsArray();
  auto laterIters = later.getIteratorTypesArray();
  auto earlierIters = earlier.getIteratorTypesArray();

  llvm::SmallVector<unsigned> loops(numLoops);
  std::iota(loops.begin(), loops.end(), 0);
  do {
    bool itersMatch = true;
    for (unsigned d = 0; d < numLoops; ++d)
      itersMatch &= laterIters[d] == earlierIters[loops[d]];
    if (!itersMatch)
      continue;
    llvm::SmallVector<unsigned> inputs(numInputs);
    std::iota(inputs.begin(), inputs.end(), 0);
    do {
      bool inputsMatch = true;
      for (unsigned i = 0; i < numInputs && inputsMatch; ++i) {
        inputsMatch =
            later.getDpsInputOperand(i)->get() ==
                earlier.getDpsInputOperand(inputs[i])->get() &&
            renameLoops(laterMaps[i], loops) == earlierMaps[inputs[i]];
      }
      if (!inputsMatch || !sameBody(earlier, later, inputs, loops))
        continue;
      AffineMap out = renameLoops(laterMaps[numInputs], loops);
      AffineMap earlierOut = earlierMaps[numInputs];
      if (out == earlierOut && laterType == earlierType &&
          (!readsOutput || laterInit == earlierInit || equalFills))
        return Match::Same;
      // A transposed result: the fill looks the same either way.
      if (out.getNumResults() == 2 && (!readsOutput || equalFills) &&
          out.getResult(0) == earlierOut.getResult(1) &&
          out.getResult(1) == earlierOut.getResult(0) &&
          laterType.getShape()[0] == earlierType.getShape()[1] &&
          laterType.getShape()[1] == earlierType.getShape()[0])
        return Match::Transposed;
    } while (std::next_permutation(inputs.begin(), inputs.end()));
  } while (std::next_permutation(loops.begin(), loops.end()));
  return Match::None;
}

/// What generics that compute the same values (or their transpose) share
/// whatever the order of their loops and inputs: the inputs as a set, the
/// loop counts by kind, the body's length and the result's element type
/// and rank. A hash of it buckets the candidates `matchGenerics` compares.
llvm::hash_code matchKey(linalg::GenericOp op) {
  llvm::SmallVector<const void *> inputs;
  for (OpOperand *operand : op.getDpsInputOperands())
    inputs.push_back(operand->get().getAsOpaquePointer());
  llvm::sort(inputs);
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  return llvm::hash_combine(
      llvm::hash_combine_range(inputs.begin(), inputs.end()), op.getNumLoops(),
      op.getNumReductionLoops(), op.getRegion().front().getOperations().size(),
      type.getElementType().getAsOpaquePointer(), type.getRank());
}

/// One factor of a matrix chain: a value that is not itself a product
/// from zero, read as it is or transposed.
struct ChainFactor {
  Value value;
  bool transposed;
  bool operator==(const ChainFactor &other) const {
    return value == other.value && transposed == other.transposed;
  }
};
using Chain = llvm::SmallVector<ChainFactor, 4>;

/// C[m, n] = Σ_k L[m, k] R[k, n] from a zero fill: the left and right
/// factors in matrix order (m the first dimension of the result), each
/// read as stored or transposed.
struct Product {
  Value left, right;
  bool leftTransposed, rightTransposed;
};

std::optional<Product> matchProductFromZero(linalg::GenericOp op) {
  if (!isPlainTensorGeneric(op) || op.getNumLoops() != 3 ||
      op.getNumDpsInputs() != 2 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || type.getRank() != 2)
      return std::nullopt;
  }
  std::optional<Attribute> fill = fillValue(op.getDpsInitOperand(0)->get());
  auto zero = fill ? dyn_cast<FloatAttr>(*fill) : FloatAttr();
  if (!zero || !zero.getValue().isZero())
    return std::nullopt;
  // Body: out + a · b (upstream's contraction recogniser).
  if (!linalg::isaContractionOpInterface(op))
    return std::nullopt;

  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  unsigned m = outMap.getDimPosition(0), n = outMap.getDimPosition(1);
  unsigned k = 3 - m - n;
  auto readAs = [&](unsigned input, unsigned row,
                    unsigned col) -> std::optional<bool> {
    AffineMap map = op.getMatchingIndexingMap(op.getDpsInputOperand(input));
    if (map.getDimPosition(0) == row && map.getDimPosition(1) == col)
      return false;
    if (map.getDimPosition(0) == col && map.getDimPosition(1) == row)
      return true;
    return std::nullopt;
  };
  for (unsigned first : {0u, 1u}) {
    std::optional<bool> leftT = readAs(first, m, k);
    std::optional<bool> rightT = readAs(1 - first, k, n);
    if (leftT && rightT)
      return Product{op.getDpsInputOperand(first)->get(),
                     op.getDpsInputOperand(1 - first)->get(), *leftT, *rightT};
  }
  return std::nullopt;
}

Chain transposedChain(llvm::ArrayRef<ChainFactor> chain) {
  Chain result;
  for (const ChainFactor &f : llvm::reverse(chain))
    result.push_back({f.value, !f.transposed});
  return result;
}

/// The factors whose product `value` is, products from zero flattened (so
/// that (A·B)·C and A·(B·C) have the same chain); memoized in `chains`.
Chain chainOf(Value value, llvm::DenseMap<Value, Chain> &chains) {
  if (auto it = chains.find(value); it != chains.end())
    return it->second;
  Chain chain;
  auto op = value.getDefiningOp<linalg::GenericOp>();
  std::optional<Product> product = op ? matchProductFromZero(op) : std::nullopt;
  if (!product) {
    chain.push_back({value, false});
  } else {
    Chain left = chainOf(product->left, chains);
    Chain right = chainOf(product->right, chains);
    if (product->leftTransposed)
      left = transposedChain(left);
    if (product->rightTransposed)
      right = transposedChain(right);
    chain = left;
    chain.append(right.begin(), right.end());
  }
  chains[value] = chain;
  return chain;
}

/// A hash that a chain and its transpose share.
size_t chainKey(llvm::ArrayRef<ChainFactor> chain) {
  auto hashOf = [](llvm::ArrayRef<ChainFactor> c) {
    llvm::hash_code h = llvm::hash_value(c.size());
    for (const ChainFactor &f : c)
      h = llvm::hash_combine(h, f.value.getAsOpaquePointer(), f.transposed);
    return static_cast<size_t>(h);
  };
  size_t plain = hashOf(chain);
  size_t flipped = hashOf(transposedChain(chain));
  return plain ^ flipped;
}

/// A generic that transposes the matrix `value`, built before `before`.
Value buildTranspose(Value value, Operation *before) {
  OpBuilder b(before);
  Location loc = before->getLoc();
  auto type = cast<RankedTensorType>(value.getType());
  Value init = tensor::EmptyOp::create(
      b, loc,
      llvm::SmallVector<int64_t>{type.getShape()[1], type.getShape()[0]},
      type.getElementType());
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{value}, ValueRange{init},
      llvm::ArrayRef<AffineMap>{AffineMap::get(2, 0, {j, i}, ctx),
                                AffineMap::get(2, 0, {i, j}, ctx)},
      llvm::SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, args[0]);
      });
  return op->getResult(0);
}

struct HLAShareTileProductsPass
    : public hla::impl::HLAShareTileProductsPassBase<HLAShareTileProductsPass> {
  void runOnOperation() override {
    // Folding makes more generics equal, and a transposed match leaves a
    // transpose to fold: repeat until nothing changes (each round removes
    // at least one generic, so this ends).
    bool changed = true;
    while (changed) {
      changed = false;
      getOperation()->walk(
          [&](linalg::GenericOp op) { changed |= foldTransposedInputs(op); });
      changed |= shareOnce();
      eraseDeadGenerics();
    }
  }

  /// Replaces the first generic that an earlier one computes; true if one
  /// was replaced.
  bool shareOnce() {
    DominanceInfo dominance(getOperation());
    // The generics seen so far, in walk order, by matchKey.
    std::unordered_map<size_t, llvm::SmallVector<linalg::GenericOp>> seen;
    // The products from zero seen so far, by chainKey.
    std::unordered_map<size_t, llvm::SmallVector<linalg::GenericOp>> chains;
    llvm::DenseMap<Value, Chain> chainOfValue;
    bool changed = false;
    auto replace = [&](linalg::GenericOp op, linalg::GenericOp earlier,
                       Match match) {
      Value result = earlier->getResult(0);
      if (match == Match::Transposed)
        result = buildTranspose(result, op);
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
      changed = true;
    };
    getOperation()->walk<WalkOrder::PreOrder>([&](linalg::GenericOp op) {
      if (!isPlainTensorGeneric(op) || isTranspose(op))
        return WalkResult::advance();
      // A product of the same factors (or of their transposes in reverse
      // order), however its products are associated.
      if (matchProductFromZero(op)) {
        Value result = op->getResult(0);
        Chain chain = chainOf(result, chainOfValue);
        Type element =
            cast<RankedTensorType>(result.getType()).getElementType();
        llvm::SmallVector<linalg::GenericOp> &candidates =
            chains[chainKey(chain)];
        for (linalg::GenericOp earlier : candidates) {
          Value other = earlier->getResult(0);
          if (cast<RankedTensorType>(other.getType()).getElementType() !=
                  element ||
              !dominance.properlyDominates(earlier.getOperation(), op))
            continue;
          Chain earlierChain = chainOf(other, chainOfValue);
          Match match = earlierChain == chain ? Match::Same
                        : transposedChain(earlierChain) == chain
                            ? Match::Transposed
                            : Match::None;
          if (match == Match::None)
            continue;
          replace(op, earlier, match);
          return WalkResult::interrupt();
        }
        candidates.push_back(op);
      }
      llvm::SmallVector<linalg::GenericOp> &candidates =
          seen[static_cast<size_t>(matchKey(op))];
      for (linalg::GenericOp earlier : candidates) {
        if (!dominance.properlyDominates(earlier.getOperation(), op))
          continue;
        Match match = matchGenerics(earlier, op);
        if (match == Match::None)
          continue;
        replace(op, earlier, match);
        return WalkResult::interrupt();
      }
      candidates.push_back(op);
      return WalkResult::advance();
    });
    return changed;
  }

  /// Drops generics (and the fills and empties feeding them) left unused.
  void eraseDeadGenerics() {
    bool erased = true;
    while (erased) {
      erased = false;
      llvm::SmallVector<Operation *> dead;
      getOperation()->walk([&](Operation *op) {
        if (isa<linalg::GenericOp, linalg::FillOp, tensor::EmptyOp>(op) &&
            op->getNumResults() == 1 && op->use_empty() &&
            (!isa<linalg::LinalgOp>(op) ||
             cast<linalg::LinalgOp>(op).hasPureTensorSemantics()))
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
      erased = !dead.empty();
    }
  }
};

} // namespace
