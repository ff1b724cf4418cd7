//===- VectorizeTiles.cpp - Register tiles for the chunk math ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-vectorize-tiles makes the chunk math vector code:
//
//   contractions  (a generic computing C += A·B over one reduction index, any
//                 layout, any batch dimensions) become register-tiled loops:
//                 for each tile of up to 8 x `vector-lanes` outputs, an
//                 accumulator vector is carried through the reduction, each
//                 step one vector.outerproduct — 8 fused multiply-adds of a
//                 broadcast element of A's column and a vector of B's row —
//                 and the tile is stored once at the end;
//   everything    else statically shaped is tiled into rows of up to
//                 4 x `vector-lanes` contiguous elements (leading dimensions
//                 one at a time, reductions in steps of 8) and vectorised by
//                 upstream's linalg vectoriser.
//
// Tile sizes divide the dimensions they tile, so every tile is static and
// needs no masking. Ops the vectoriser refuses keep their scalar form.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "TransformUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "hla-vectorize-tiles"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAVECTORIZETILESPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// The loop dimensions of a contraction
/// C[b.., i, j] += A[b.., i, k] B[b.., k, j] (any operand layout; i or j may
/// be absent for matrix-vector forms).
struct ContractionDims {
  llvm::SmallVector<unsigned> batch;
  std::optional<unsigned> i, j;
  unsigned k = 0;
};

/// Whether the generic's body is out + a * b (in either order).
static bool isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  Value other = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = other.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// Recognises a vectorisable contraction: two inputs, one output, one
/// reduction index, projected-permutation maps, a multiply-accumulate body,
/// and at least one output dimension for the vector lanes.
static std::optional<ContractionDims> matchContraction(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics() || !isMultiplyAccumulate(op))
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  if (llvm::count(iterators, utils::IteratorType::reduction) != 1)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  AffineMap mapA = op.getIndexingMapsArray()[0];
  AffineMap mapB = op.getIndexingMapsArray()[1];
  AffineMap mapC = op.getIndexingMapsArray()[2];
  ContractionDims dims;
  for (auto [d, it] : llvm::enumerate(iterators)) {
    bool inA = mapA.isFunctionOfDim(d), inB = mapB.isFunctionOfDim(d);
    bool inC = mapC.isFunctionOfDim(d);
    if (it == utils::IteratorType::reduction) {
      if (!inA || !inB || inC)
        return std::nullopt;
      dims.k = d;
    } else if (inA && inB && inC) {
      dims.batch.push_back(d);
    } else if (inA && inC) {
      if (dims.i)
        return std::nullopt;
      dims.i = d;
    } else if (inB && inC) {
      if (dims.j)
        return std::nullopt;
      dims.j = d;
    } else {
      return std::nullopt;
    }
  }
  if (!dims.i && !dims.j)
    return std::nullopt;
  return dims;
}

/// Emits the register-tiled loops of a contraction (see the file comment).
static void vectorizeContraction(IRRewriter &rewriter, linalg::GenericOp op,
                                 const ContractionDims &dims,
                                 int64_t vectorLanes) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
  Value c = op.getDpsInits()[0];
  AffineMap mapA = op.getIndexingMapsArray()[0];
  AffineMap mapB = op.getIndexingMapsArray()[1];
  AffineMap mapC = op.getIndexingMapsArray()[2];
  Type element = cast<RankedTensorType>(c.getType()).getElementType();

  // The vector lanes run along j (B's and C's columns) when there is one,
  // else along i; the other output dimension is blocked by up to 8 rows.
  int64_t lanesDim = dims.j ? *dims.j : *dims.i;
  std::optional<unsigned> rowDim = dims.j ? dims.i : std::nullopt;
  // Two vectors per row when the dimension allows: twice the fused
  // multiply-adds per broadcast element of the row operand.
  int64_t lanes = largestDivisorUpTo(ranges[lanesDim], 2 * vectorLanes);
  if (lanes < vectorLanes)
    lanes = largestDivisorUpTo(ranges[lanesDim], vectorLanes);

  // The lane operand is read one vector per reduction step; if its lane
  // dimension is not its contiguous (last) one, each read would gather
  // strided elements. Copy it once into a layout where it is (a transpose
  // of a few KB, against a reduction's worth of gathers).
  {
    Value &laneOperand = dims.j ? b : a;
    AffineMap &laneMap = dims.j ? mapB : mapA;
    unsigned rank = laneMap.getNumResults();
    std::optional<unsigned> pos =
        laneMap.getResultPosition(rewriter.getAffineDimExpr(lanesDim));
    if (pos && *pos != rank - 1) {
      // New order: every other dimension in place, the lane one last.
      llvm::SmallVector<unsigned> order;
      for (unsigned r = 0; r < rank; ++r)
        if (r != *pos)
          order.push_back(r);
      order.push_back(*pos);
      auto type = cast<RankedTensorType>(laneOperand.getType());
      llvm::SmallVector<int64_t> shape;
      llvm::SmallVector<AffineExpr> newResults;
      for (unsigned r : order) {
        shape.push_back(type.getDimSize(r));
        newResults.push_back(laneMap.getResult(r));
      }
      // copy[order...] = operand[...]: iterate over the operand's dims.
      llvm::SmallVector<AffineExpr> outExprs;
      for (unsigned r : order)
        outExprs.push_back(rewriter.getAffineDimExpr(r));
      MLIRContext *ctx = rewriter.getContext();
      Value init =
          tensor::EmptyOp::create(rewriter, loc, shape, type.getElementType());
      llvm::SmallVector<utils::IteratorType> iters(
          rank, utils::IteratorType::parallel);
      auto copy = linalg::GenericOp::create(
          rewriter, loc, TypeRange{init.getType()}, ValueRange{laneOperand},
          ValueRange{init},
          llvm::ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank),
                                    AffineMap::get(rank, 0, outExprs, ctx)},
          iters, "", "", [](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(nb, l, args[0]);
          });
      laneOperand = copy.getResult(0);
      laneMap = AffineMap::get(laneMap.getNumDims(), 0, newResults, ctx);
    }
  }
  int64_t rows = rowDim ? largestDivisorUpTo(ranges[*rowDim], 8) : 1;
  auto vectorOf = [&](llvm::ArrayRef<int64_t> shape) {
    return VectorType::get(shape, element);
  };
  // The accumulator is [rows, lanes] (or [lanes] without a row dimension).
  llvm::SmallVector<int64_t> accShape;
  if (rowDim)
    accShape.push_back(rows);
  accShape.push_back(lanes);

  // Loops: batch dims, rows, lanes (steps = tile sizes), then k inside.
  llvm::SmallVector<unsigned> outerDims(dims.batch);
  if (rowDim)
    outerDims.push_back(*rowDim);
  outerDims.push_back(lanesDim);
  auto step = [&](unsigned d) -> int64_t {
    if (rowDim && d == *rowDim)
      return rows;
    if (int64_t(d) == lanesDim)
      return lanes;
    return 1;
  };

  Value zeroIndex = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value padding =
      arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(element));
  // Indices of an operand for the loop values `iv` (one per loop dim).
  auto indicesFor = [&](AffineMap map, llvm::ArrayRef<Value> iv) {
    llvm::SmallVector<Value> indices;
    for (AffineExpr e : map.getResults())
      indices.push_back(iv[cast<AffineDimExpr>(e).getPosition()]);
    return indices;
  };
  // A permutation map reading the vector dims `vdims` (loop dims) from an
  // operand with indexing map `map`.
  auto readMap = [&](AffineMap map, llvm::ArrayRef<unsigned> vdims) {
    llvm::SmallVector<AffineExpr> exprs;
    for (unsigned d : vdims) {
      std::optional<unsigned> pos =
          map.getResultPosition(rewriter.getAffineDimExpr(d));
      exprs.push_back(rewriter.getAffineDimExpr(*pos));
    }
    return AffineMap::get(map.getNumResults(), 0, exprs, rewriter.getContext());
  };
  llvm::SmallVector<unsigned> accDims;
  if (rowDim)
    accDims.push_back(*rowDim);
  accDims.push_back(lanesDim);

  // Builds the loop nest recursively over outerDims, threading C.
  std::function<Value(unsigned, llvm::SmallVector<Value>, Value)> build =
      [&](unsigned level, llvm::SmallVector<Value> iv, Value cTensor) -> Value {
    if (level == outerDims.size()) {
      // Innermost: the reduction, accumulating in registers.
      llvm::SmallVector<bool> inBounds(accDims.size(), true);
      Value acc0 = vector::TransferReadOp::create(
          rewriter, loc, vectorOf(accShape), cTensor, indicesFor(mapC, iv),
          AffineMapAttr::get(readMap(mapC, accDims)), padding,
          /*mask=*/Value(), rewriter.getBoolArrayAttr(inBounds));
      Value kUpper =
          arith::ConstantIndexOp::create(rewriter, loc, ranges[dims.k]);
      Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
      auto kLoop = scf::ForOp::create(
          rewriter, loc, zeroIndex, kUpper, one, ValueRange{acc0},
          [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
            llvm::SmallVector<Value> kiv(iv);
            kiv[dims.k] = k;
            // B's row (or A's column without j): the lanes.
            Value laneOperand = dims.j ? b : a;
            AffineMap laneMap = dims.j ? mapB : mapA;
            Value laneVec = vector::TransferReadOp::create(
                nb, l, vectorOf({lanes}), laneOperand, indicesFor(laneMap, kiv),
                AffineMapAttr::get(readMap(laneMap, {unsigned(lanesDim)})),
                padding, Value(), nb.getBoolArrayAttr({true}));
            Value next;
            if (rowDim) {
              Value column = vector::TransferReadOp::create(
                  nb, l, vectorOf({rows}), a, indicesFor(mapA, kiv),
                  AffineMapAttr::get(readMap(mapA, {*rowDim})), padding,
                  Value(), nb.getBoolArrayAttr({true}));
              next = vector::OuterProductOp::create(nb, l, vectorOf(accShape),
                                                    column, laneVec, acc[0]);
            } else {
              // A vector times the other operand's scalar at k.
              Value scalarOperand = dims.j ? a : b;
              AffineMap scalarMap = dims.j ? mapA : mapB;
              Value s = tensor::ExtractOp::create(nb, l, scalarOperand,
                                                  indicesFor(scalarMap, kiv));
              next = vector::OuterProductOp::create(nb, l, vectorOf(accShape),
                                                    laneVec, s, acc[0]);
            }
            scf::YieldOp::create(nb, l, next);
          });
      llvm::SmallVector<bool> inBoundsW(accDims.size(), true);
      return vector::TransferWriteOp::create(
                 rewriter, loc, kLoop.getResult(0), cTensor,
                 indicesFor(mapC, iv),
                 AffineMapAttr::get(readMap(mapC, accDims)),
                 rewriter.getBoolArrayAttr(inBoundsW))
          .getResult();
    }
    unsigned d = outerDims[level];
    Value upper = arith::ConstantIndexOp::create(rewriter, loc, ranges[d]);
    Value stepValue = arith::ConstantIndexOp::create(rewriter, loc, step(d));
    auto loop = scf::ForOp::create(
        rewriter, loc, zeroIndex, upper, stepValue, ValueRange{cTensor},
        [&](OpBuilder &nb, Location l, Value index, ValueRange carried) {
          OpBuilder::InsertionGuard guard(rewriter);
          rewriter.setInsertionPoint(nb.getInsertionBlock(),
                                     nb.getInsertionPoint());
          llvm::SmallVector<Value> next(iv);
          next[d] = index;
          Value result = build(level + 1, next, carried[0]);
          scf::YieldOp::create(rewriter, l, result);
        });
    return loop.getResult(0);
  };
  llvm::SmallVector<Value> iv(ranges.size(), zeroIndex);
  Value result = build(0, iv, c);
  rewriter.replaceOp(op, result);
}

/// Reduction dimensions are cut into steps of at most this many: a whole
/// [64, 32] tile summed at once would be one 2048-element vector, which the
/// vector-to-LLVM lowering unrolls element by element (tens of thousands of
/// shuffles per chunk loop, most of a model's compile time).
constexpr int64_t kReductionStep = 8;

/// Tile sizes for a non-contraction op: rows of contiguous elements, and
/// reductions in steps of kReductionStep (the tiled op accumulates into the
/// output across the steps).
static llvm::SmallVector<int64_t> rowTiles(linalg::LinalgOp op,
                                           int64_t vectorLanes) {
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  llvm::SmallVector<int64_t> tiles(ranges.size(), 0);
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  std::optional<unsigned> inner;
  if (outMap.getNumResults() >= 1)
    if (auto d = dyn_cast<AffineDimExpr>(
            outMap.getResult(outMap.getNumResults() - 1)))
      inner = d.getPosition();
  for (unsigned i = 0; i < ranges.size(); ++i) {
    if (iterators[i] != utils::IteratorType::parallel) {
      tiles[i] = largestDivisorUpTo(ranges[i], kReductionStep);
      if (tiles[i] == ranges[i])
        tiles[i] = 0;
      continue;
    }
    tiles[i] = inner && i == *inner
                   ? largestDivisorUpTo(ranges[i], 4 * vectorLanes)
                   : 1;
    if (tiles[i] == ranges[i])
      tiles[i] = 0;
  }
  return tiles;
}

struct HLAVectorizeTilesPass
    : public hla::impl::HLAVectorizeTilesPassBase<HLAVectorizeTilesPass> {
  using HLAVectorizeTilesPassBase::HLAVectorizeTilesPassBase;

  void runOnOperation() override {
    llvm::SmallVector<linalg::LinalgOp> candidates;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
          !llvm::any_of(op.getStaticLoopRanges(),
                        [](int64_t s) { return ShapedType::isDynamic(s); }))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
        if (std::optional<ContractionDims> dims = matchContraction(generic)) {
          vectorizeContraction(rewriter, generic, *dims, vectorLanes);
          continue;
        }
      }
      llvm::SmallVector<int64_t> tiles = rowTiles(op, vectorLanes);
      Operation *target = op;
      rewriter.setInsertionPoint(op);
      if (llvm::any_of(tiles, [](int64_t t) { return t != 0; })) {
        scf::SCFTilingOptions options;
        llvm::SmallVector<OpFoldResult> sizes;
        for (int64_t t : tiles)
          sizes.push_back(rewriter.getIndexAttr(t));
        options.setTileSizes(sizes);
        FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
            rewriter, cast<TilingInterface>(op.getOperation()), options);
        if (failed(tiled))
          continue;
        rewriter.replaceOp(op, tiled->replacements);
        if (tiled->tiledOps.size() != 1)
          continue;
        target = tiled->tiledOps.front();
      }
      rewriter.setInsertionPoint(target);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, target);
      if (succeeded(vectorized))
        rewriter.replaceOp(target, vectorized->replacements);
    }
  }
};
} // namespace
