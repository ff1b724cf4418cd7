//===- PrepareTiles.cpp - A chunk loop in the forms tiles place
//------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Rewrites of the copy of a loop that hla-gpu-lower-register-tiles tries
// (PrepareTiles.h).
//
// Register tiles are 2-D. A chunk body written for reverse differentiation
// keeps some tiles in blocks instead: KDA's derived backward reads its
// chunk's rows as [blocks, 16, d] and its pairs within blocks as
// [blocks, 16, 16] or [blocks, 16, blocks, 16], so that every index map is
// a projection (the cotangent of a read is then one generic). On the copy
// of a loop that hla-gpu-lower-register-tiles tries to place, these
// rewrites turn such a body back into 2-D tiles: a rank-3 tile
// [a, b, c] is the [a·b, c] tile it views, a rank-4 [a, b, c, e] the
// [a·b, c·e] one; reshapes between the two forms vanish, and a generic
// over blocks iterates over the 2-D tile's rows instead (its block and
// in-block indices are the row's floordiv and mod), reading its operands
// through the linearized maps, the maps the forward's 2-D bands have. Rows
// written into a tile (the cotangent of a row read: Γ's last row) become an
// elementwise select, which places like any other; an elementwise generic
// with several results (fusion's, where a producer's result has other
// readers) becomes one generic per result.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/GPU/PrepareTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::hla::gpumap;

namespace {

/// A static tensor of rank 3 or 4: a tile in blocks.
bool isBlocked(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         (tensor.getRank() == 3 || tensor.getRank() == 4);
}

/// The dimensions of a blocked tile that make its 2-D tile's rows and
/// columns.
SmallVector<ReassociationIndices> blockGroups(int64_t rank) {
  if (rank == 3)
    return {{0, 1}, {2}};
  return {{0, 1}, {2, 3}};
}

RankedTensorType flatType(RankedTensorType type) {
  SmallVector<int64_t> shape;
  for (const ReassociationIndices &group : blockGroups(type.getRank())) {
    int64_t size = 1;
    for (int64_t d : group)
      size *= type.getDimSize(d);
    shape.push_back(size);
  }
  return RankedTensorType::get(shape, type.getElementType());
}

/// A tile in blocks made in `forall`'s body (not a slice of a global
/// tensor of rank 4: tokens [B, T, H, d]).
bool isBlockTile(Value v, scf::ForallOp forall) {
  Operation *def = v.getDefiningOp();
  return isBlocked(v.getType()) && def && forall->isProperAncestor(def) &&
         isa<tensor::ExpandShapeOp, linalg::GenericOp, linalg::FillOp,
             tensor::EmptyOp>(def);
}

bool touchesBlocked(Operation *op, scf::ForallOp forall) {
  auto blocked = [&](Value v) { return isBlockTile(v, forall); };
  return llvm::any_of(op->getOperands(), blocked) ||
         llvm::any_of(op->getResults(), blocked);
}

/// Whether the flattening can rewrite `op`: its reshapes are between a
/// blocked tile and its 2-D tile; a generic's blocked output is indexed by
/// loops alone, those of each row or column group parallel.
bool canFlatten(Operation *op) {
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return expand.getSrcType().getRank() == 2 &&
           isBlocked(expand.getResultType()) &&
           expand.getReassociationIndices() ==
               blockGroups(expand.getResultType().getRank());
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return collapse.getResultType().getRank() == 2 &&
           isBlocked(collapse.getSrcType()) &&
           collapse.getReassociationIndices() ==
               blockGroups(collapse.getSrcType().getRank());
  if (isa<tensor::EmptyOp, linalg::FillOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInits() != 1 ||
      llvm::any_of(generic->getOperandTypes(),
                   [](Type t) { return !isa<RankedTensorType>(t); }))
    return false;
  OpOperand *out = generic.getDpsInitOperand(0);
  if (!isBlocked(out->get().getType()))
    return true;
  AffineMap outMap = generic.getMatchingIndexingMap(out);
  if (!outMap.isProjectedPermutation())
    return false;
  for (AffineExpr e : outMap.getResults())
    if (generic.getIteratorTypesArray()[cast<AffineDimExpr>(e).getPosition()] !=
        utils::IteratorType::parallel)
      return false;
  return true;
}

/// `expr`'s results grouped and linearized: the index into the 2-D tile of
/// a blocked tile of `shape`.
SmallVector<AffineExpr> linearize(ArrayRef<AffineExpr> results,
                                  ArrayRef<int64_t> shape) {
  SmallVector<AffineExpr> flat;
  for (const ReassociationIndices &group : blockGroups(shape.size())) {
    AffineExpr e = results[group.front()];
    for (int64_t d : llvm::drop_begin(group))
      e = e * shape[d] + results[d];
    flat.push_back(e);
  }
  return flat;
}

struct Flattener {
  /// The 2-D tile each blocked value stands for.
  llvm::DenseMap<Value, Value> flat;

  Value flatOf(Value v) { return flat.lookup(v) ? flat.lookup(v) : v; }

  void rewrite(Operation *op);
  void rewriteGeneric(linalg::GenericOp op);
};

void Flattener::rewrite(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    flat[expand.getResult()] = expand.getSrc();
    return;
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    collapse.getResult().replaceAllUsesWith(flatOf(collapse.getSrc()));
    return;
  }
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    flat[empty.getResult()] =
        tensor::EmptyOp::create(b, loc, flatType(empty.getType()).getShape(),
                                empty.getType().getElementType());
    return;
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Value result = fill.getResult(0);
    flat[result] = linalg::FillOp::create(b, loc, fill.value(),
                                          flatOf(fill.getOutputs()[0]))
                       .getResult(0);
    return;
  }
  rewriteGeneric(cast<linalg::GenericOp>(op));
}

void Flattener::rewriteGeneric(linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t loops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  OpOperand *out = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(out);

  // The loops of each row or column group of a blocked output become one
  // loop over the 2-D tile's rows or columns, at its first loop's place.
  llvm::DenseMap<int64_t, SmallVector<int64_t>> mergedAt;
  llvm::DenseSet<int64_t> merged;
  if (auto type = dyn_cast<RankedTensorType>(out->get().getType());
      isBlocked(type)) {
    for (const ReassociationIndices &group : blockGroups(type.getRank())) {
      if (group.size() == 1)
        continue;
      SmallVector<int64_t> dims;
      for (int64_t d : group)
        dims.push_back(cast<AffineDimExpr>(outMap.getResult(d)).getPosition());
      int64_t first = *llvm::min_element(dims);
      mergedAt[first] = dims;
      merged.insert(dims.begin(), dims.end());
    }
  }
  // Each old loop as an expression of the new ones, and which new loop
  // (with the divisor and range that recover it) a linalg.index reads.
  struct OldLoop {
    int64_t newLoop;
    int64_t divisor = 1;
    int64_t range = 0; // 0: no mod (the group's leading loop)
  };
  SmallVector<OldLoop> oldLoops(loops);
  SmallVector<AffineExpr> subst(loops);
  SmallVector<int64_t> newRanges;
  SmallVector<utils::IteratorType> newIterators;
  for (int64_t d = 0; d < loops; ++d) {
    if (merged.contains(d) && !mergedAt.count(d))
      continue;
    int64_t n = newRanges.size();
    AffineExpr loop = getAffineDimExpr(n, ctx);
    if (!mergedAt.count(d)) {
      oldLoops[d] = {n};
      subst[d] = loop;
      newRanges.push_back(ranges[d]);
      newIterators.push_back(iterators[d]);
      continue;
    }
    // Group loops (a0, ..., am) in the output's order: ak is the new loop
    // divided by the ranges after it, mod its own (a0 without the mod).
    SmallVector<int64_t> &dims = mergedAt[d];
    int64_t divisor = 1;
    for (int64_t k = dims.size() - 1; k >= 0; --k) {
      AffineExpr e = divisor == 1 ? loop : loop.floorDiv(divisor);
      int64_t range = k == 0 ? 0 : ranges[dims[k]];
      if (range)
        e = e % range;
      subst[dims[k]] = e;
      oldLoops[dims[k]] = {n, divisor, range};
      divisor *= ranges[dims[k]];
    }
    newRanges.push_back(divisor);
    newIterators.push_back(utils::IteratorType::parallel);
  }
  int64_t newLoops = newRanges.size();

  // Operands and their maps in the new loops, blocked ones linearized.
  SmallVector<Value> inputs, outputs;
  SmallVector<AffineMap> maps;
  llvm::SmallBitVector bare(newLoops);
  auto add = [&](OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand).replaceDimsAndSymbols(
        subst, {}, newLoops, 0);
    SmallVector<AffineExpr> results(map.getResults());
    if (auto type = dyn_cast<RankedTensorType>(operand.get().getType());
        isBlocked(type))
      results = linearize(results, type.getShape());
    for (AffineExpr &e : results) {
      e = simplifyAffineExpr(e, newLoops, 0);
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        bare.set(dim.getPosition());
    }
    maps.push_back(AffineMap::get(newLoops, 0, results, ctx));
    return flatOf(operand.get());
  };
  for (OpOperand *input : op.getDpsInputOperands())
    inputs.push_back(add(*input));
  Value init = add(*out);
  AffineMap initMap = maps.pop_back_val();
  // A loop no operand indexes by itself gets a window operand, never read,
  // that gives it its range (linalg's pooling ops do the same).
  Type element = getElementTypeOrSelf(out->get().getType());
  SmallVector<Type> windowTypes;
  for (int64_t n = 0; n < newLoops; ++n) {
    if (bare.test(n))
      continue;
    inputs.push_back(tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{newRanges[n]}, element));
    maps.push_back(
        AffineMap::get(newLoops, 0, {getAffineDimExpr(n, ctx)}, ctx));
    windowTypes.push_back(element);
  }
  maps.push_back(initMap);
  outputs.push_back(init);

  auto rewritten = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, outputs, maps, newIterators);
  Block &oldBody = op.getRegion().front();
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (OpOperand *input : op.getDpsInputOperands())
    argTypes.push_back(getElementTypeOrSelf(input->get().getType()));
  argTypes.append(windowTypes);
  argTypes.push_back(element);
  argLocs.assign(argTypes.size(), loc);
  Block *body = b.createBlock(&rewritten.getRegion(),
                              rewritten.getRegion().end(), argTypes, argLocs);
  IRMapping mapping;
  int64_t ins = op.getNumDpsInputs();
  for (int64_t i = 0; i < ins; ++i)
    mapping.map(oldBody.getArgument(i), body->getArgument(i));
  mapping.map(oldBody.getArgument(ins), body->getArguments().back());
  b.setInsertionPointToStart(body);
  for (Operation &bodyOp : oldBody) {
    auto index = dyn_cast<linalg::IndexOp>(bodyOp);
    if (!index) {
      b.clone(bodyOp, mapping);
      continue;
    }
    OldLoop old = oldLoops[index.getDim()];
    Value v = linalg::IndexOp::create(b, loc, old.newLoop);
    if (old.divisor != 1)
      v = arith::DivUIOp::create(
          b, loc, v, arith::ConstantIndexOp::create(b, loc, old.divisor));
    if (old.range)
      v = arith::RemUIOp::create(
          b, loc, v, arith::ConstantIndexOp::create(b, loc, old.range));
    mapping.map(index.getResult(), v);
  }
  Value result = rewritten.getResult(0);
  if (isBlocked(out->get().getType()))
    flat[op.getResult(0)] = result;
  else
    op.getResult(0).replaceAllUsesWith(result);
}

} // namespace

bool mlir::hla::gpumap::flattenBlockedTiles(scf::ForallOp forall) {
  SmallVector<Operation *> ops;
  bool feasible = true;
  forall.getBody()->walk([&](Operation *op) {
    if (!touchesBlocked(op, forall))
      return;
    if (!canFlatten(op))
      feasible = false;
    // Every blocked operand made in the body, by an op rewritten first.
    for (Value operand : op->getOperands())
      if (isBlocked(operand.getType()) && !isBlockTile(operand, forall))
        feasible = false;
    ops.push_back(op);
  });
  // A blocked loop-carried value or block argument has no 2-D form here.
  forall.getBody()->walk([&](Block *block) {
    if (block != forall.getBody() &&
        !isa<linalg::GenericOp>(block->getParentOp()) &&
        llvm::any_of(block->getArgumentTypes(), isBlocked))
      feasible = false;
  });
  if (!feasible || ops.empty())
    return false;
  Flattener flattener;
  for (Operation *op : ops)
    flattener.rewrite(op);
  for (Operation *op : llvm::reverse(ops)) {
    assert(op->use_empty() && "a blocked tile read by an op not rewritten");
    op->erase();
  }
  return true;
}

void mlir::hla::gpumap::insertedRowsAsSelects(scf::ForallOp forall) {
  SmallVector<tensor::InsertSliceOp> inserts;
  forall.getBody()->walk([&](tensor::InsertSliceOp insert) {
    RankedTensorType dest = insert.getDestType();
    if (insert.getSourceType().getRank() == 1 && dest.getRank() == 2 &&
        dest.hasStaticShape() && insert.hasUnitStride() &&
        isZeroInteger(insert.getMixedOffsets()[1]) &&
        getConstantIntValue(insert.getMixedSizes()[0]) == 1 &&
        getConstantIntValue(insert.getMixedSizes()[1]) == dest.getDimSize(1) &&
        isa_and_nonnull<linalg::LinalgOp, tensor::EmptyOp>(
            insert.getDest().getDefiningOp()))
      inserts.push_back(insert);
  });
  for (tensor::InsertSliceOp insert : inserts) {
    OpBuilder b(insert);
    Location loc = insert.getLoc();
    MLIRContext *ctx = insert.getContext();
    RankedTensorType type = insert.getDestType();
    Value row =
        getValueOrCreateConstantIndexOp(b, loc, insert.getMixedOffsets()[0]);
    AffineExpr r = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {c}, ctx),
                                   AffineMap::get(2, 0, {r, c}, ctx),
                                   AffineMap::get(2, 0, {r, c}, ctx)};
    Value empty =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    auto select = linalg::GenericOp::create(
        b, loc, TypeRange{type},
        ValueRange{insert.getSource(), insert.getDest()}, ValueRange{empty},
        maps,
        SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value at = linalg::IndexOp::create(nb, nloc, 0);
          Value here = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq,
                                             at, row);
          Value v = arith::SelectOp::create(nb, nloc, here, args[0], args[1]);
          linalg::YieldOp::create(nb, nloc, v);
        });
    insert.getResult().replaceAllUsesWith(select.getResult(0));
    insert.erase();
  }
}

void mlir::hla::gpumap::splitElementwiseResults(scf::ForallOp forall) {
  SmallVector<linalg::GenericOp> generics;
  forall.getBody()->walk([&](linalg::GenericOp op) {
    if (op.getNumDpsInits() > 1 && op.getNumReductionLoops() == 0)
      generics.push_back(op);
  });
  for (linalg::GenericOp op : generics) {
    OpBuilder b(op);
    Block &oldBody = op.getRegion().front();
    int64_t ins = op.getNumDpsInputs();
    auto yield = cast<linalg::YieldOp>(oldBody.getTerminator());
    for (int64_t i = 0; i < op.getNumDpsInits(); ++i) {
      // The other outputs' values the body reads become inputs.
      SmallVector<Value> inputs(op.getDpsInputs());
      SmallVector<AffineMap> maps;
      for (OpOperand *input : op.getDpsInputOperands())
        maps.push_back(op.getMatchingIndexingMap(input));
      SmallVector<Type> argTypes;
      for (Value input : inputs)
        argTypes.push_back(getElementTypeOrSelf(input.getType()));
      SmallVector<int64_t> readInits;
      for (int64_t j = 0; j < op.getNumDpsInits(); ++j) {
        OpOperand *init = op.getDpsInitOperand(j);
        if (j == i || op.getMatchingBlockArgument(init).use_empty())
          continue;
        readInits.push_back(j);
        inputs.push_back(init->get());
        maps.push_back(op.getMatchingIndexingMap(init));
        argTypes.push_back(getElementTypeOrSelf(init->get().getType()));
      }
      OpOperand *out = op.getDpsInitOperand(i);
      maps.push_back(op.getMatchingIndexingMap(out));
      argTypes.push_back(getElementTypeOrSelf(out->get().getType()));
      auto single = linalg::GenericOp::create(
          b, op.getLoc(), TypeRange{op.getResult(i).getType()}, inputs,
          ValueRange{out->get()}, maps, op.getIteratorTypesArray());
      SmallVector<Location> locs(argTypes.size(), op.getLoc());
      Block *body = OpBuilder(op).createBlock(
          &single.getRegion(), single.getRegion().end(), argTypes, locs);
      IRMapping mapping;
      for (int64_t k = 0; k < ins; ++k)
        mapping.map(oldBody.getArgument(k), body->getArgument(k));
      for (auto [k, j] : llvm::enumerate(readInits))
        mapping.map(oldBody.getArgument(ins + j), body->getArgument(ins + k));
      mapping.map(oldBody.getArgument(ins + i), body->getArguments().back());
      OpBuilder bodyBuilder = OpBuilder::atBlockEnd(body);
      for (Operation &bodyOp : oldBody.without_terminator())
        bodyBuilder.clone(bodyOp, mapping);
      linalg::YieldOp::create(bodyBuilder, op.getLoc(),
                              mapping.lookupOrDefault(yield.getOperand(i)));
      // What the yielded value does not need is dead: erase it.
      SmallVector<Operation *> cloned;
      for (Operation &bodyOp : body->without_terminator())
        cloned.push_back(&bodyOp);
      for (Operation *bodyOp : llvm::reverse(cloned))
        if (bodyOp->use_empty() && isMemoryEffectFree(bodyOp))
          bodyOp->erase();
      op.getResult(i).replaceAllUsesWith(single.getResult(0));
    }
    op.erase();
  }
}

void mlir::hla::gpumap::prepareForRegisterTiles(scf::ForallOp forall) {
  flattenBlockedTiles(forall);
  insertedRowsAsSelects(forall);
  splitElementwiseResults(forall);
}
