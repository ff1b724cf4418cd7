//===- HoistChunkWork.cpp - A chunk loop's state-free work, in parallel ---===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-hoist-chunk-work (Passes.td): the work of a fused chunk loop that the
// carried state does not reach moves into a pass parallel over chunks,
// which stacks the tiles the loop still reads; the loop reads them back.
// Only the loop's sequential part stays sequential: KDA's decays, pairs,
// triangular solve, W and U run with every chunk in parallel, and the loop
// keeps the products with the state.
//
//===----------------------------------------------------------------------===//

#include "HoistChunkWork.h"

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAHOISTCHUNKWORKPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// The forall's one chunk loop (an scf.for carrying values, from 0 by 1 to
/// a static bound; the forall's bounds static too), or null.
scf::ForOp chunkLoopOf(scf::ForallOp forall) {
  scf::ForOp found;
  for (Operation &op : forall.getBody()->without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(&op);
    if (!loop || loop.getNumRegionIterArgs() == 0)
      continue;
    if (found)
      return nullptr; // one chunk loop per forall
    found = loop;
  }
  if (!found || !isZeroInteger(found.getLowerBound()) ||
      getConstantIntValue(found.getStep()) != 1 ||
      !getConstantIntValue(found.getUpperBound()) ||
      llvm::any_of(forall.getMixedUpperBound(),
                   [](OpFoldResult ub) { return !getConstantIntValue(ub); }))
    return nullptr;
  return found;
}

/// A chunk loop of a forall and how it splits.
struct Split {
  scf::ForallOp forall;
  scf::ForOp loop;
  /// Ops of the loop body that no carried value reaches.
  llvm::DenseSet<Operation *> free;
  /// The ops of the forall (before the loop) and of the loop body that the
  /// parallel pass clones, in order.
  llvm::SmallVector<Operation *> cloned;
  /// The free tiles the rest of the loop reads, each stacked.
  llvm::SmallVector<Value> stacked;
  llvm::SmallVector<bool> inBF16;
  int64_t moved = 0, staying = 0;
};

class HoistChunkWork
    : public hla::impl::HLAHoistChunkWorkPassBase<HoistChunkWork> {
public:
  using HLAHoistChunkWorkPassBase::HLAHoistChunkWorkPassBase;

  void runOnOperation() override {
    for (scf::ForallOp forall : outermostForalls(getOperation())) {
      std::optional<Split> split = analyse(forall);
      if (!split) {
        Location where = forall.getLoc();
        scf::ForOp loop = chunkLoopOf(forall);
        std::optional<ReadoutReport> readout =
            loop ? hoistChunkReadout(forall, loop, minProducts) : std::nullopt;
        if (readout && report)
          mlir::emitRemark(
              where,
              llvm::formatv(
                  "hla-hoist-chunk-work: output rows ({0} reductions a chunk) "
                  "moved to a pass parallel over chunks after the loop, the "
                  "state's {1} staying; {2} states stacked",
                  readout->readoutReductions, readout->stateReductions,
                  readout->stacked));
        continue;
      }
      if (report)
        forall.emitRemark(llvm::formatv(
            "hla-hoist-chunk-work: {0} reductions moved to a pass parallel "
            "over chunks, {1} staying; {2} tiles stacked ({3} in bf16)",
            split->moved, split->staying, split->stacked.size(),
            llvm::count(split->inBF16, true)));
      rewrite(*split);
    }
  }

private:
  std::optional<Split> analyse(scf::ForallOp forall) const;
  void rewrite(Split &split) const;
};

std::optional<Split> HoistChunkWork::analyse(scf::ForallOp forall) const {
  Split split;
  split.forall = forall;
  split.loop = chunkLoopOf(forall);
  scf::ForOp loop = split.loop;
  if (!loop)
    return std::nullopt;

  // What the carried values reach; the rest is free.
  llvm::DenseSet<Value> reached(loop.getRegionIterArgs().begin(),
                                loop.getRegionIterArgs().end());
  llvm::DenseSet<Value> heavy;
  Block *body = loop.getBody();
  for (Operation &op : body->without_terminator()) {
    llvm::SmallVector<Value> read = valuesRead(&op);
    if (llvm::any_of(read, [&](Value v) { return reached.contains(v); })) {
      reached.insert(op.result_begin(), op.result_end());
      continue;
    }
    split.free.insert(&op);
    if (isReduction(&op) ||
        llvm::any_of(read, [&](Value v) { return heavy.contains(v); }))
      heavy.insert(op.result_begin(), op.result_end());
  }

  // The heavy free tiles the rest reads.
  for (Operation &op : body->without_terminator()) {
    if (!split.free.contains(&op))
      continue;
    for (Value result : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!heavy.contains(result) || !type || type.getRank() < 1 ||
          type.getRank() > 2 || !type.hasStaticShape())
        continue;
      bool readByRest = false, onlyContractions = true;
      for (OpOperand &use : result.getUses()) {
        Operation *reader = body->findAncestorOpInBlock(*use.getOwner());
        if (split.free.contains(reader))
          continue;
        readByRest = true;
        auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
        onlyContractions &= generic &&
                            linalg::isaContractionOpInterface(generic) &&
                            generic.isDpsInput(&use);
      }
      if (!readByRest)
        continue;
      split.stacked.push_back(result);
      split.inBF16.push_back(bf16Operands && onlyContractions &&
                             type.getElementType().isF32());
    }
  }
  if (split.stacked.empty())
    return std::nullopt;

  // What the parallel pass computes: the stacked tiles' slice in the loop
  // body and the forall's ops before the loop.
  llvm::DenseSet<Operation *> needed;
  llvm::SmallVector<Value> worklist(split.stacked.begin(), split.stacked.end());
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (llvm::is_contained(forall.getRegionIterArgs(), v))
      return std::nullopt; // reads the output being written
    Operation *def = v.getDefiningOp();
    if (!def || !forall->isProperAncestor(def) || def == loop.getOperation())
      continue; // an induction variable, or from outside the forall
    if (def->getBlock() != forall.getBody() && def->getBlock() != body)
      continue; // inside an op already needed
    if (!needed.insert(def).second)
      continue;
    llvm::append_range(worklist, valuesRead(def));
  }
  for (Operation &op : forall.getBody()->without_terminator())
    if (needed.contains(&op))
      split.cloned.push_back(&op);
  for (Operation &op : body->without_terminator())
    if (needed.contains(&op)) {
      split.cloned.push_back(&op);
      split.moved += isReduction(&op);
    }
  for (Operation &op : body->without_terminator())
    if (isReduction(&op) && !needed.contains(&op))
      ++split.staying;
  if (split.moved < minProducts || split.moved < 2 * split.staying)
    return std::nullopt;
  return split;
}

void HoistChunkWork::rewrite(Split &split) const {
  scf::ForallOp forall = split.forall;
  scf::ForOp loop = split.loop;
  Location loc = loop.getLoc();
  OpBuilder b(forall);
  int64_t chunks = *getConstantIntValue(loop.getUpperBound());
  llvm::SmallVector<int64_t> extents = forallExtents(forall);

  // Stack k: [forall extents..., chunks * rows, cols].
  llvm::SmallVector<Value> stacks;
  for (auto [tile, bf16] : llvm::zip(split.stacked, split.inBF16)) {
    auto type = cast<RankedTensorType>(tile.getType());
    stacks.push_back(tensor::EmptyOp::create(
        b, loc, stackShape(extents, type, chunks),
        bf16 ? b.getBF16Type() : type.getElementType()));
  }
  IRMapping mapping;
  scf::ForallOp parallel =
      createChunkForall(b, loc, forall, loop, chunks, stacks, mapping);

  // Its body: the moved work, for the chunk of its last index.
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(parallel.getTerminator());
    llvm::SmallVector<Value> ivs = parallel.getInductionVars();
    for (Operation *op : split.cloned)
      b.clone(*op, mapping);
    // Each tile (truncated where stacked in bf16) and where it goes.
    llvm::SmallVector<Value> values;
    llvm::SmallVector<StackRows> places;
    for (auto [tile, bf16] : llvm::zip(split.stacked, split.inBF16)) {
      Value value = mapping.lookup(tile);
      if (bf16)
        value = convertElements(b, loc, value, b.getBF16Type());
      values.push_back(value);
      places.push_back(chunkRows(b, loc, ValueRange(ivs).drop_back(),
                                 ivs.back(),
                                 cast<RankedTensorType>(tile.getType())));
    }
    b.setInsertionPointToEnd(parallel.getTerminator().getBody());
    for (auto [k, value, at] : llvm::enumerate(values, places))
      tensor::ParallelInsertSliceOp::create(b, loc, value,
                                            parallel.getRegionIterArgs()[k],
                                            at.offsets, at.sizes, at.strides);
  }

  // The loop reads the chunk's rows of each stack.
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  for (auto [k, tile] : llvm::enumerate(split.stacked)) {
    auto type = cast<RankedTensorType>(tile.getType());
    StackRows at = chunkRows(b, loc, forall.getInductionVars(),
                             loop.getInductionVar(), type);
    auto sliceType = RankedTensorType::get(
        type.getShape(),
        split.inBF16[k] ? b.getBF16Type() : type.getElementType());
    Value read =
        tensor::ExtractSliceOp::create(b, loc, sliceType, parallel.getResult(k),
                                       at.offsets, at.sizes, at.strides);
    if (split.inBF16[k])
      read = convertElements(b, loc, read, type.getElementType());
    tile.replaceUsesWithIf(read, [&](OpOperand &use) {
      Operation *reader = body->findAncestorOpInBlock(*use.getOwner());
      return reader && !split.free.contains(reader);
    });
  }

  // The moved work, now unread in the loop, goes.
  llvm::SmallVector<Operation *> moved;
  for (Operation &op : body->without_terminator())
    if (split.free.contains(&op))
      moved.push_back(&op);
  for (Operation *op : llvm::reverse(moved))
    if (op->use_empty() && isMemoryEffectFree(op))
      op->erase();
}

} // namespace

llvm::SmallVector<int64_t>
mlir::hla::stackShape(llvm::ArrayRef<int64_t> extents, RankedTensorType type,
                      int64_t chunks) {
  llvm::SmallVector<int64_t> shape(extents);
  if (type.getRank() == 1)
    shape.append({chunks, type.getDimSize(0)});
  else
    shape.append({chunks * type.getDimSize(0), type.getDimSize(1)});
  return shape;
}

StackRows mlir::hla::stackRows(OpBuilder &b, ValueRange outer,
                               OpFoldResult first, int64_t rows, int64_t cols) {
  StackRows at;
  at.offsets = getAsOpFoldResult(outer);
  at.sizes.assign(outer.size(), b.getIndexAttr(1));
  at.offsets.append({first, b.getIndexAttr(0)});
  at.sizes.append({b.getIndexAttr(rows), b.getIndexAttr(cols)});
  at.strides.assign(at.offsets.size(), b.getIndexAttr(1));
  return at;
}

StackRows mlir::hla::chunkRows(OpBuilder &b, Location loc, ValueRange outer,
                               Value chunk, RankedTensorType type) {
  if (type.getRank() == 1)
    return stackRows(b, outer, chunk, 1, type.getDimSize(0));
  Value first = arith::MulIOp::create(
      b, loc, chunk,
      arith::ConstantIndexOp::create(b, loc, type.getDimSize(0)));
  return stackRows(b, outer, first, type.getDimSize(0), type.getDimSize(1));
}

scf::ForallOp mlir::hla::createChunkForall(OpBuilder &b, Location loc,
                                           scf::ForallOp forall,
                                           scf::ForOp loop, int64_t chunks,
                                           ValueRange outputs,
                                           IRMapping &mapping) {
  llvm::SmallVector<OpFoldResult> bounds(forall.getMixedUpperBound());
  bounds.push_back(b.getIndexAttr(chunks));
  auto chunkForall = scf::ForallOp::create(b, loc, bounds, outputs,
                                           /*mapping=*/std::nullopt);
  llvm::SmallVector<Value> ivs = chunkForall.getInductionVars();
  for (auto [from, to] : llvm::zip(forall.getInductionVars(), ivs))
    mapping.map(from, to);
  mapping.map(loop.getInductionVar(), ivs.back());
  return chunkForall;
}

llvm::SmallVector<int64_t> mlir::hla::forallExtents(scf::ForallOp forall) {
  llvm::SmallVector<int64_t> extents;
  for (OpFoldResult ub : forall.getMixedUpperBound())
    extents.push_back(*getConstantIntValue(ub));
  return extents;
}

llvm::SmallVector<scf::ForallOp> mlir::hla::outermostForalls(Operation *root) {
  llvm::SmallVector<scf::ForallOp> foralls;
  root->walk([&](scf::ForallOp forall) {
    if (!forall->getParentOfType<scf::ForallOp>())
      foralls.push_back(forall);
  });
  return foralls;
}

bool mlir::hla::isReduction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() > 0;
}

Value mlir::hla::convertElements(OpBuilder &b, Location loc, Value tile,
                                 Type element) {
  auto type = cast<RankedTensorType>(tile.getType());
  if (type.getElementType() == element)
    return tile;
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), element);
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  llvm::SmallVector<utils::IteratorType> parallel(
      type.getRank(), utils::IteratorType::parallel);
  bool widen = element.getIntOrFloatBitWidth() >
               type.getElementType().getIntOrFloatBitWidth();
  return linalg::GenericOp::create(
             b, loc, empty.getType(), tile, empty,
             llvm::ArrayRef<AffineMap>{identity, identity}, parallel,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value v =
                   widen ? arith::ExtFOp::create(nb, nloc, element, args[0])
                               .getResult()
                         : arith::TruncFOp::create(nb, nloc, element, args[0])
                               .getResult();
               linalg::YieldOp::create(nb, nloc, v);
             })
      .getResult(0);
}

llvm::SmallVector<Value> mlir::hla::valuesRead(Operation *op) {
  llvm::SetVector<Value> read(op->operand_begin(), op->operand_end());
  getUsedValuesDefinedAbove(op->getRegions(), read);
  return read.takeVector();
}
