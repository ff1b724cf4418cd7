//===- HoistChunkReadout.cpp - A chunk loop's readout, in parallel -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The second split of hla-hoist-chunk-work (Passes.td): a fused chunk loop
// whose output rows cost far more than its state keeps only the state in
// sequence and stacks the state entering each chunk; a pass parallel over
// chunks after it computes every chunk's rows from the stacked state.
// LinSimp's readout is its anchor window, W / G passes of four products per
// chunk, against two products for the state.
//
//===----------------------------------------------------------------------===//

#include "HoistChunkWork.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::hla;

namespace {

/// The reductions `op` runs, nested ones included, a loop's body counted
/// once per iteration where its trip count is static, a branch's cheaper
/// side (causal isolation's second readout of a chunk runs only where a
/// token is not finite).
int64_t reductionsRun(Operation *op) {
  auto regionReductions = [](Region &region) {
    int64_t total = 0;
    for (Block &block : region)
      for (Operation &inner : block)
        total += reductionsRun(&inner);
    return total;
  };
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return std::min(regionReductions(branch.getThenRegion()),
                    regionReductions(branch.getElseRegion()));
  int64_t total = 0;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    total += linalgOp.getNumReductionLoops() > 0;
  for (Region &region : op->getRegions())
    total += regionReductions(region);
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (lb && ub && step && *step > 0 && *ub > *lb)
      total *= llvm::divideCeil(*ub - *lb, *step);
  }
  return total;
}

/// The ops of `block` (other than `except`) whose results `roots` reach
/// back to, through what each reads.
llvm::DenseSet<Operation *> sliceIn(Block *block, llvm::ArrayRef<Value> roots,
                                    Operation *except = nullptr) {
  llvm::DenseSet<Operation *> slice;
  llvm::SmallVector<Value> worklist(roots.begin(), roots.end());
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block || def == except ||
        !slice.insert(def).second)
      continue;
    llvm::append_range(worklist, valuesRead(def));
  }
  return slice;
}

/// A chunk loop whose rows hoistChunkReadout computes after it.
struct ReadoutSplit {
  scf::ForallOp forall;
  scf::ForOp loop;
  /// Per carried value: for output rows, the insertion that yields the
  /// next rows, the slice of the shared output they start from and the
  /// write of the loop's result back into it; null for the state.
  llvm::SmallVector<tensor::InsertSliceOp> rowsInsert;
  llvm::SmallVector<tensor::ExtractSliceOp> rowsSlice;
  /// Ops of the loop body the state needs, and the rows (insertions
  /// excluded), in order.
  llvm::SmallVector<Operation *> state, readout;
  /// Ops of the forall body before the loop that the readout reads.
  llvm::SmallVector<Operation *> prologue;
  /// The carried state values (iter_args positions) the readout reads.
  llvm::SmallVector<unsigned> stacked;
  int64_t readoutReductions = 0, stateReductions = 0;
};

std::optional<ReadoutSplit> analyse(scf::ForallOp forall, scf::ForOp loop,
                                    int64_t minProducts) {
  ReadoutSplit split;
  split.forall = forall;
  split.loop = loop;
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  unsigned count = loop.getNumRegionIterArgs();
  split.rowsInsert.resize(count);
  split.rowsSlice.resize(count);
  llvm::SmallVector<Value> rowRoots, stateRoots;
  for (unsigned i = 0; i < count; ++i) {
    BlockArgument arg = loop.getRegionIterArgs()[i];
    auto slice = loop.getInitArgs()[i].getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice ||
        !llvm::is_contained(forall.getRegionIterArgs(), slice.getSource())) {
      stateRoots.push_back(yield.getOperand(i));
      continue;
    }
    // Output rows: one insertion into the carried rows a chunk, the loop's
    // result written back where the rows came from.
    auto insert = yield.getOperand(i).getDefiningOp<tensor::InsertSliceOp>();
    Value result = loop.getResult(i);
    auto write = result.hasOneUse() ? dyn_cast<tensor::ParallelInsertSliceOp>(
                                          *result.getUsers().begin())
                                    : nullptr;
    if (!insert || insert.getDest() != arg || !arg.hasOneUse() ||
        insert->getBlock() != body || !insert.hasUnitStride() ||
        !slice.hasUnitStride() || !write ||
        write.getDest() != slice.getSource() ||
        write.getMixedOffsets() != slice.getMixedOffsets() ||
        write.getMixedSizes() != slice.getMixedSizes())
      return std::nullopt;
    split.rowsInsert[i] = insert;
    split.rowsSlice[i] = slice;
    for (Value v : valuesRead(insert))
      if (v != arg)
        rowRoots.push_back(v);
  }
  if (rowRoots.empty())
    return std::nullopt;
  llvm::DenseSet<Operation *> readout = sliceIn(body, rowRoots);
  llvm::DenseSet<Operation *> state = sliceIn(body, stateRoots);
  for (Operation &op : body->without_terminator()) {
    if (state.contains(&op)) {
      split.state.push_back(&op);
      split.stateReductions += reductionsRun(&op);
    }
    if (readout.contains(&op)) {
      split.readout.push_back(&op);
      if (!state.contains(&op))
        split.readoutReductions += reductionsRun(&op);
    }
  }
  // Twice the products of the first split: a chunk's rows are read once
  // more from memory than in the loop, and hla2's unmasked readout (9 to
  // 11 products against 2) is not measured so.
  if (split.readoutReductions < 2 * minProducts ||
      split.readoutReductions < 4 * split.stateReductions)
    return std::nullopt;

  // The state entering each chunk that the readout reads is stacked: whole
  // static vectors and 2-D tiles only.
  for (unsigned i = 0; i < count; ++i) {
    if (split.rowsInsert[i])
      continue;
    BlockArgument arg = loop.getRegionIterArgs()[i];
    bool read = llvm::any_of(arg.getUsers(), [&](Operation *user) {
      return readout.contains(body->findAncestorOpInBlock(*user));
    });
    if (!read)
      continue;
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape() || type.getRank() < 1 ||
        type.getRank() > 2)
      return std::nullopt;
    split.stacked.push_back(i);
  }

  // What the readout reads from the forall body before the loop.
  llvm::SmallVector<Value> read;
  for (Operation *op : split.readout)
    llvm::append_range(read, valuesRead(op));
  for (tensor::InsertSliceOp insert : split.rowsInsert)
    if (insert)
      llvm::append_range(read, valuesRead(insert));
  for (Value v : read)
    if (llvm::is_contained(forall.getRegionIterArgs(), v))
      return std::nullopt; // the output being written
  llvm::DenseSet<Operation *> prologue =
      sliceIn(forall.getBody(), read, loop.getOperation());
  for (Operation *op : prologue)
    for (Value v : valuesRead(op))
      if (llvm::is_contained(forall.getRegionIterArgs(), v))
        return std::nullopt;
  for (Operation &op : forall.getBody()->without_terminator())
    if (prologue.contains(&op))
      split.prologue.push_back(&op);
  return split;
}

OpFoldResult mapped(IRMapping &mapping, OpFoldResult v) {
  if (auto value = dyn_cast<Value>(v))
    return mapping.lookupOrDefault(value);
  return v;
}

/// `a + b` of two indices (folded where both are constants).
OpFoldResult addIndices(OpBuilder &b, Location loc, OpFoldResult x,
                        OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x);
  std::optional<int64_t> cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx + *cy);
  if (cx == 0)
    return y;
  if (cy == 0)
    return x;
  return arith::AddIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, x),
                               getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

void rewrite(ReadoutSplit &split) {
  scf::ForallOp forall = split.forall;
  scf::ForOp loop = split.loop;
  Location loc = loop.getLoc();
  OpBuilder b(forall);
  int64_t chunks = *getConstantIntValue(loop.getUpperBound());
  llvm::SmallVector<int64_t> extents = forallExtents(forall);
  unsigned outputs = forall.getRegionIterArgs().size();

  // Which shared outputs the loop writes rows of (the parallel pass's now).
  llvm::SmallVector<bool> rowsOutput(outputs, false);
  for (tensor::ExtractSliceOp slice : split.rowsSlice)
    if (slice)
      rowsOutput[cast<BlockArgument>(slice.getSource()).getArgNumber() -
                 forall.getRank()] = true;

  // The sequential pass: the forall's other outputs and the stacks.
  llvm::SmallVector<Value> seqOutputs;
  llvm::SmallVector<int> seqIndex(outputs, -1);
  for (unsigned j = 0; j < outputs; ++j)
    if (!rowsOutput[j]) {
      seqIndex[j] = seqOutputs.size();
      seqOutputs.push_back(forall.getOutputs()[j]);
    }
  unsigned firstStack = seqOutputs.size();
  for (unsigned i : split.stacked) {
    auto type = cast<RankedTensorType>(loop.getRegionIterArgs()[i].getType());
    seqOutputs.push_back(tensor::EmptyOp::create(
        b, loc, stackShape(extents, type, chunks), type.getElementType()));
  }
  auto seq = scf::ForallOp::create(b, loc, forall.getMixedUpperBound(),
                                   seqOutputs, forall.getMapping());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(seq.getTerminator());
    IRMapping m;
    for (auto [from, to] :
         llvm::zip(forall.getInductionVars(), seq.getInductionVars()))
      m.map(from, to);
    for (unsigned j = 0; j < outputs; ++j)
      if (seqIndex[j] >= 0)
        m.map(forall.getRegionIterArgs()[j],
              seq.getRegionIterArgs()[seqIndex[j]]);
    // Everything of the body whose inputs are there (not the rows' slices
    // of the outputs it no longer writes); the loop keeps the state.
    auto available = [&](Operation *op) {
      return llvm::all_of(valuesRead(op), [&](Value v) {
        return m.contains(v) ||
               !forall->isAncestor(v.getParentBlock()->getParentOp());
      });
    };
    for (Operation &op : forall.getBody()->without_terminator()) {
      if (&op != loop.getOperation()) {
        if (available(&op))
          b.clone(op, m);
        continue;
      }
      // The loop: its state, and the stacks it writes the state entering
      // each chunk into.
      llvm::SmallVector<unsigned> carried;
      llvm::SmallVector<Value> inits;
      for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i)
        if (!split.rowsInsert[i]) {
          carried.push_back(i);
          inits.push_back(m.lookupOrDefault(loop.getInitArgs()[i]));
        }
      for (auto [k, i] : llvm::enumerate(split.stacked)) {
        auto type =
            cast<RankedTensorType>(loop.getRegionIterArgs()[i].getType());
        llvm::SmallVector<int64_t> shape = stackShape({}, type, chunks);
        StackRows all = stackRows(b, seq.getInductionVars(), b.getIndexAttr(0),
                                  shape[0], shape[1]);
        inits.push_back(tensor::ExtractSliceOp::create(
            b, loc, RankedTensorType::get(shape, type.getElementType()),
            seq.getRegionIterArgs()[firstStack + k], all.offsets, all.sizes,
            all.strides));
      }
      auto seqLoop =
          scf::ForOp::create(b, loc, m.lookupOrDefault(loop.getLowerBound()),
                             m.lookupOrDefault(loop.getUpperBound()),
                             m.lookupOrDefault(loop.getStep()), inits);
      OpBuilder::InsertionGuard inLoop(b);
      b.setInsertionPointToStart(seqLoop.getBody());
      m.map(loop.getInductionVar(), seqLoop.getInductionVar());
      for (auto [k, i] : llvm::enumerate(carried)) {
        m.map(loop.getRegionIterArgs()[i], seqLoop.getRegionIterArgs()[k]);
        m.map(loop.getResult(i), seqLoop.getResult(k));
      }
      // The state is stacked first, before the chunk's ops update it in
      // place (read later, it would have to be copied).
      llvm::SmallVector<Value> stackedRows;
      for (auto [k, i] : llvm::enumerate(split.stacked)) {
        auto type =
            cast<RankedTensorType>(loop.getRegionIterArgs()[i].getType());
        StackRows at = chunkRows(b, loc, {}, seqLoop.getInductionVar(), type);
        stackedRows.push_back(tensor::InsertSliceOp::create(
            b, loc, m.lookup(loop.getRegionIterArgs()[i]),
            seqLoop.getRegionIterArgs()[carried.size() + k], at.offsets,
            at.sizes, at.strides));
      }
      for (Operation *op : split.state)
        b.clone(*op, m);
      llvm::SmallVector<Value> yielded;
      auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
      for (unsigned i : carried)
        yielded.push_back(m.lookupOrDefault(yield.getOperand(i)));
      llvm::append_range(yielded, stackedRows);
      scf::YieldOp::create(b, loc, yielded);
      b.setInsertionPointToEnd(seq.getTerminator().getBody());
      for (auto [k, i] : llvm::enumerate(split.stacked)) {
        Value stackRowsValue = seqLoop.getResult(carried.size() + k);
        auto shape = cast<RankedTensorType>(stackRowsValue.getType());
        StackRows all = stackRows(b, seq.getInductionVars(), b.getIndexAttr(0),
                                  shape.getDimSize(0), shape.getDimSize(1));
        tensor::ParallelInsertSliceOp::create(
            b, loc, stackRowsValue, seq.getRegionIterArgs()[firstStack + k],
            all.offsets, all.sizes, all.strides);
      }
    }
    b.setInsertionPointToEnd(seq.getTerminator().getBody());
    for (Operation &op : forall.getTerminator().getYieldingOps()) {
      auto write = cast<tensor::ParallelInsertSliceOp>(op);
      unsigned j = cast<BlockArgument>(write.getDest()).getArgNumber() -
                   forall.getRank();
      if (!rowsOutput[j])
        b.clone(op, m);
    }
  }

  // The parallel pass: a chunk's rows from its stacked state.
  llvm::SmallVector<Value> parOutputs;
  llvm::SmallVector<int> parIndex(outputs, -1);
  for (unsigned j = 0; j < outputs; ++j)
    if (rowsOutput[j]) {
      parIndex[j] = parOutputs.size();
      parOutputs.push_back(forall.getOutputs()[j]);
    }
  IRMapping m;
  scf::ForallOp par =
      createChunkForall(b, loc, forall, loop, chunks, parOutputs, m);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(par.getTerminator());
    llvm::SmallVector<Value> ivs = par.getInductionVars();
    ValueRange outer = ValueRange(ivs).drop_back();
    for (unsigned j = 0; j < outputs; ++j)
      if (parIndex[j] >= 0)
        m.map(forall.getRegionIterArgs()[j],
              par.getRegionIterArgs()[parIndex[j]]);
    for (auto [k, i] : llvm::enumerate(split.stacked)) {
      BlockArgument arg = loop.getRegionIterArgs()[i];
      auto type = cast<RankedTensorType>(arg.getType());
      StackRows at = chunkRows(b, loc, outer, ivs.back(), type);
      m.map(arg, tensor::ExtractSliceOp::create(
                     b, loc, type, seq.getResult(firstStack + k), at.offsets,
                     at.sizes, at.strides));
    }
    for (Operation *op : split.prologue)
      b.clone(*op, m);
    for (Operation *op : split.readout)
      b.clone(*op, m);
    // Each insertion of rows into the carried rows is one into the output
    // at the rows' place there.
    struct Write {
      Value source;
      unsigned output;
      llvm::SmallVector<OpFoldResult> offsets, sizes;
    };
    llvm::SmallVector<Write> writes;
    for (auto [insert, slice] : llvm::zip(split.rowsInsert, split.rowsSlice)) {
      if (!insert)
        continue;
      Write w;
      w.source = m.lookup(insert.getSource());
      w.output =
          parIndex[cast<BlockArgument>(slice.getSource()).getArgNumber() -
                   forall.getRank()];
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      unsigned kept = 0;
      for (auto [d, offset] : llvm::enumerate(slice.getMixedOffsets())) {
        OpFoldResult from = mapped(m, offset);
        if (dropped.test(d)) {
          w.offsets.push_back(from);
          w.sizes.push_back(b.getIndexAttr(1));
          continue;
        }
        w.offsets.push_back(addIndices(
            b, loc, from, mapped(m, insert.getMixedOffsets()[kept])));
        w.sizes.push_back(mapped(m, insert.getMixedSizes()[kept]));
        ++kept;
      }
      writes.push_back(std::move(w));
    }
    b.setInsertionPointToEnd(par.getTerminator().getBody());
    for (Write &w : writes)
      tensor::ParallelInsertSliceOp::create(
          b, loc, w.source, par.getRegionIterArgs()[w.output], w.offsets,
          w.sizes,
          llvm::SmallVector<OpFoldResult>(w.offsets.size(), b.getIndexAttr(1)));
  }

  for (unsigned j = 0; j < outputs; ++j)
    forall.getResult(j).replaceAllUsesWith(rowsOutput[j]
                                               ? par.getResult(parIndex[j])
                                               : seq.getResult(seqIndex[j]));
  forall.erase();
}

} // namespace

std::optional<ReadoutReport> mlir::hla::hoistChunkReadout(scf::ForallOp forall,
                                                          scf::ForOp loop,
                                                          int64_t minProducts) {
  std::optional<ReadoutSplit> split = analyse(forall, loop, minProducts);
  if (!split)
    return std::nullopt;
  ReadoutReport report{split->readoutReductions, split->stateReductions,
                       int64_t(split->stacked.size())};
  rewrite(*split);
  return report;
}
