//===- LowerRegisterTiles.cpp - Chunk loops with tiles in registers -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-lower-register-tiles: a placed (sequence, head) loop (TilePlan,
// PlaceTiles.cpp) becomes a gpu.launch with one warpgroup per iteration.
// The body is emitted op by op in program order:
//
//  * fragments are the thread's elements (wgmma's accumulator layout) as
//    SSA scalars; elementwise ops run on them element by element, reading
//    on-demand tiles at the element's coordinates;
//  * a contraction stages its operands as bf16 copies in shared memory
//    (with the later contractions' operands that are ready, so that one
//    barrier serves them all) and issues wgmma with descriptors; its result
//    is waited for at its first reader;
//  * barriers: before rewriting a copy that wgmma may still read, and
//    before wgmma reads a copy threads wrote (after fence.proxy.async);
//  * output rows are stored from the fragments, rows before the chunk end.
//
//===----------------------------------------------------------------------===//

#include "ChunkLoopMapper.h"
#include "RegisterTiles.h"

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPULOWERREGISTERTILESPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

namespace {

/// The calling thread's elements of a `rows` x `cols` fragment (rows / 64
/// row blocks, each a wgmma accumulator), or the accumulators they are
/// still being computed into.
struct Fragment {
  int64_t rows = 0, cols = 0;
  /// Per row block, the accumulator struct of a wgmma not yet waited for.
  llvm::SmallVector<Value> pending;
  llvm::SmallVector<Value> elements;

  static Fragment of(Value tile) {
    auto type = cast<RankedTensorType>(tile.getType());
    Fragment f;
    f.rows = type.getDimSize(0);
    f.cols = type.getDimSize(1);
    return f;
  }
};

class TileEmitter {
public:
  explicit TileEmitter(TilePlan &plan)
      : plan(plan), b(plan.forall), loc(plan.forall.getLoc()) {}
  void run();

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value scalar(Value v);
  Value scalar(OpFoldResult v) {
    if (auto value = dyn_cast<Value>(v))
      return scalar(value);
    return index(*getConstantIntValue(v));
  }
  // A fragment element's tile coordinates. The thread's slots run over the
  // row blocks, plan.slots(64, cols) each; slot j of a block holds row
  // rowLo (+ 8 for the second pair of each 8 columns) of the block and
  // column 8 (j / 4) + pairCol (+ 1 for odd j) of its warpgroup's share of
  // the `cols` columns (warpgroup g holds columns [g cols / W,
  // (g + 1) cols / W)).
  Value slotRow(int64_t i, int64_t cols) {
    int64_t perBlock = plan.slots(kFragmentRows, cols);
    int64_t block = i / perBlock, j = i % perBlock;
    int64_t offset = block * kFragmentRows + ((j / 2) % 2 ? 8 : 0);
    return offset ? arith::AddIOp::create(b, loc, rowLo, index(offset)) : rowLo;
  }
  Value slotCol(int64_t i, int64_t cols) {
    int64_t j = i % plan.slots(kFragmentRows, cols);
    Value col =
        arith::AddIOp::create(b, loc, pairCol, index(8 * (j / 4) + j % 2));
    if (plan.warpgroups == 1)
      return col;
    return arith::AddIOp::create(
        b, loc, col,
        arith::MulIOp::create(b, loc, warpgroup,
                              index(cols / plan.warpgroups)));
  }
  static int64_t columns(Value tile) {
    return cast<RankedTensorType>(tile.getType()).getDimSize(1);
  }
  int64_t slotsOf(Value tile) {
    auto type = cast<RankedTensorType>(tile.getType());
    return plan.slots(type.getDimSize(0), type.getDimSize(1));
  }

  /// Element (row, col) of an on-demand tile (`col` null for a vector).
  Value evalAt(Value tile, Value row, Value col);
  /// `operand` of `op` at the loop position `ivs`.
  Value evalOperand(linalg::GenericOp op, OpOperand &operand,
                    llvm::ArrayRef<Value> ivs);
  llvm::SmallVector<Value> evalRow8(Value tile, Value row, Value col0);
  /// Eight consecutive elements of global `buffer` from `indices`: one
  /// 16-byte load where the buffer starts on a 16-byte boundary, else eight.
  llvm::SmallVector<Value> loadRow8(Value buffer,
                                    llvm::ArrayRef<Value> indices);
  /// The same as eight loads (zeros where `inside`, if given, is false).
  llvm::SmallVector<Value>
  loadElements8(Value buffer, llvm::ArrayRef<Value> indices, Value inside);
  /// Whether global `buffer` starts on a 16-byte boundary (computed once at
  /// the kernel's start: rows of 8-element multiples keep it).
  Value alignedOf(Value buffer);
  /// The indices into the global buffer of slice `slice` at its tile
  /// coordinates (row, col).
  llvm::SmallVector<Value> sliceIndices(tensor::ExtractSliceOp slice, Value row,
                                        Value col) {
    return indicesAt(slice.getMixedOffsets(), slice.getDroppedDims(), row, col);
  }
  llvm::SmallVector<Value> indicesAt(llvm::ArrayRef<OpFoldResult> offsets,
                                     const llvm::SmallBitVector &dropped,
                                     Value row, Value col);
  llvm::SmallVector<Value> cloneBody(linalg::GenericOp op,
                                     llvm::ArrayRef<Value> ivs,
                                     llvm::function_ref<Value(OpOperand &)> in);
  /// A fragment's elements (waiting for its wgmma), or an on-demand tile's
  /// at the fragment coordinates.
  llvm::SmallVector<Value> elements(Value tile);
  void setFragment(Value tile, Fragment f) {
    fragmentOf[tile] = fragments.size();
    fragments.push_back(std::move(f));
  }

  void emitBlock(Block &block);
  void emitOp(Operation *op);
  void emitElementwise(linalg::GenericOp op);
  void emitContraction(linalg::GenericOp op);
  void emitRows(tensor::InsertSliceOp op);
  void emitRows(tensor::ParallelInsertSliceOp op);
  /// Stores rows [0, length) of `tile` at `indices(row, col)` of `buffer`.
  void emitTileRows(
      Value tile, Value length, Value buffer,
      llvm::function_ref<llvm::SmallVector<Value>(Value, Value)> indices);
  void emitLoop(scf::ForOp loop);
  void emitReduction(linalg::GenericOp op);
  void emitIf(scf::IfOp op);
  /// The value of a 0-d tensor (Placement::ScalarTensor).
  Value zeroDim(Value tensor) {
    if (Value v = reduced.lookup(tensor))
      return v;
    if (auto fromElements = tensor.getDefiningOp<tensor::FromElementsOp>())
      return scalar(fromElements.getElements()[0]);
    return scalar(tensor.getDefiningOp<linalg::FillOp>().value());
  }
  /// Sync state saved around a region emitted on its own (a branch).
  struct SyncState {
    llvm::DenseSet<unsigned> materialized, readSince, writtenSince;
    bool unknownState;
  };
  SyncState saveSync() {
    return {materialized, readSince, writtenSince, unknownState};
  }
  void restoreSync(const SyncState &s) {
    materialized = s.materialized;
    readSince = s.readSince;
    writtenSince = s.writtenSince;
    unknownState = s.unknownState;
  }
  /// The landing buffer pair of a token insertion, if it has one.
  std::optional<unsigned> landingOf(tensor::InsertSliceOp insert) {
    for (auto [i, l] : llvm::enumerate(plan.landing))
      if (l.tokens == insert)
        return i;
    return std::nullopt;
  }
  /// `v` (a scalar of `loop`'s body) recomputed with the induction variable
  /// mapped as in `mapping`.
  Value cloneAt(Value v, scf::ForOp loop, IRMapping &mapping);
  /// Element (row, col) of a shared-memory tile of `rows` rows laid out
  /// as TilePlan::Staged says: (col / 8) groupBytes(rows) / 2 + 8 row +
  /// col % 8.
  Value groupedIndex(int64_t rows, Value row, Value col) {
    Value group = arith::DivUIOp::create(b, loc, col, index(8));
    Value at = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, group, index(groupBytes(rows) / 2)),
        arith::MulIOp::create(b, loc, row, index(8)));
    return arith::AddIOp::create(b, loc, at,
                                 arith::RemUIOp::create(b, loc, col, index(8)));
  }
  /// Element (row, col) of landing pair `l`'s current buffer.
  Value landingIndex(unsigned l, Value row, Value col) {
    return arith::AddIOp::create(b, loc, landingCurrent[l],
                                 groupedIndex(plan.landing[l].rows, row, col));
  }
  /// A loop of the block over `tile`'s rows, 8 columns at a time
  /// (consecutive threads on consecutive rows); leaves the builder in its
  /// body and returns the row and first column there.
  std::pair<Value, Value> enterRowGroups(RankedTensorType tile) {
    int64_t rows = tile.getDimSize(0), groups = tile.getDimSize(1) / 8;
    auto loop = scf::ForOp::create(b, loc, threadId, index(rows * groups),
                                   index(plan.threads()));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value unit = loop.getInductionVar();
    Value row = arith::RemUIOp::create(b, loc, unit, index(rows));
    Value col0 = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, unit, index(rows)), index(8));
    return {row, col0};
  }
  /// Starts copying the token rows of landing pair `l` for the chunk whose
  /// induction variable is `iv` into its buffer at element `base`.
  void issueLanding(unsigned l, scf::ForOp loop, Value iv, Value base);

  /// Makes the shared-memory copies `needed` (and those of later
  /// contractions of `op`'s block that are ready).
  void stage(Operation *op, llvm::ArrayRef<unsigned> needed);
  void materialize(unsigned staged);
  /// How a contraction reads copy `staged` (K along the tile's rows or its
  /// columns): the descriptor's address (base + offset bytes) and strides.
  struct Operand {
    Value base;
    int64_t offset, kGroupBytes, mnGroupBytes;
    bool mnMajor;
  };
  Operand operandOf(unsigned staged, bool kIsRow);
  void waitAll();
  void barrier();
  /// Whether copies `a` and `b` share bytes (shareSharedMemory; tiles
  /// read from landing buffers have none of their own).
  bool overlap(unsigned a, unsigned b) const {
    const TilePlan::Staged &x = plan.staged[a], &y = plan.staged[b];
    return !x.landing && !y.landing && x.offset < y.offset + y.bytes() &&
           y.offset < x.offset + x.bytes();
  }
  void beforeWrite(unsigned staged) {
    // wgmma may still read this copy, or another in the same bytes.
    if (unknownState || llvm::any_of(readSince, [&](unsigned read) {
          return overlap(read, staged);
        })) {
      waitAll();
      barrier();
    }
  }
  void beforeRead(unsigned staged) {
    if (unknownState || writtenSince.contains(staged))
      barrier();
  }

  TilePlan &plan;
  OpBuilder b;
  Location loc;
  IRMapping scalars;
  llvm::DenseMap<Value, unsigned> fragmentOf;
  llvm::SmallVector<Fragment> fragments;
  llvm::SmallVector<unsigned> pendingFragments;
  llvm::DenseMap<Value, Value> buffers; // global tensors -> memrefs
  llvm::SmallVector<Value> stagedViews;
  /// Per landing buffer pair (TilePlan::Landing): its view, and inside its
  /// loop the offset of the current chunk's buffer.
  llvm::SmallVector<Value> landingViews;
  llvm::DenseMap<unsigned, Value> landingCurrent;
  llvm::DenseMap<Value, Value> reduced; // whole-tile reductions' values
  Value window;
  llvm::DenseSet<unsigned> materialized, readSince, writtenSince;
  bool unknownState = false;
  Value windowAddress, threadId, lane, warpInGroup, warpgroup, rowLo, pairCol;
  llvm::DenseMap<Value, Value> alignment; // global buffer -> i1
  Block *kernelEntry = nullptr;
};

} // namespace

Value TileEmitter::scalar(Value v) {
  if (Value mapped = scalars.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (def && def->hasTrait<OpTrait::ConstantLike>() &&
      !plan.forall->isAncestor(def)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kernelEntry);
    Value copy = b.clone(*def)->getResult(0);
    scalars.map(v, copy);
    return copy;
  }
  return v;
}

llvm::SmallVector<Value>
TileEmitter::indicesAt(llvm::ArrayRef<OpFoldResult> offsets,
                       const llvm::SmallBitVector &dropped, Value row,
                       Value col) {
  llvm::SmallVector<Value> indices;
  int kept = 0;
  for (auto [d, offset] : llvm::enumerate(offsets)) {
    Value at = scalar(offset);
    if (!dropped.test(d))
      at = arith::AddIOp::create(b, loc, at, kept++ == 0 ? row : col);
    indices.push_back(at);
  }
  return indices;
}

llvm::SmallVector<Value>
TileEmitter::cloneBody(linalg::GenericOp op, llvm::ArrayRef<Value> ivs,
                       llvm::function_ref<Value(OpOperand &)> in) {
  Block &body = op.getRegion().front();
  IRMapping mapping;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    // A 0-d tensor is its one value everywhere (except a reduction's own
    // running value, which `in` gives).
    if (plan.of(operand.get()) == Placement::ScalarTensor &&
        !(op.isDpsInit(&operand) &&
          op.getNumReductionLoops() == op.getNumLoops())) {
      mapping.map(arg, zeroDim(operand.get()));
      continue;
    }
    mapping.map(arg, in(operand));
  }
  for (Operation &inner : body.without_terminator()) {
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(idx.getResult(), ivs[idx.getDim()]);
      continue;
    }
    for (Value operand : inner.getOperands())
      if (!mapping.contains(operand) &&
          !op.getRegion().isAncestor(operand.getParentRegion()))
        mapping.map(operand, scalar(operand));
    b.clone(inner, mapping);
  }
  llvm::SmallVector<Value> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  return results;
}

Value TileEmitter::evalAt(Value tile, Value row, Value col) {
  Operation *def = tile.getDefiningOp();
  if (auto constant = dyn_cast_or_null<arith::ConstantOp>(def)) {
    auto dense = cast<DenseElementsAttr>(constant.getValue());
    return arith::ConstantOp::create(b, loc, dense.getSplatValue<TypedAttr>());
  }
  if (auto fill = dyn_cast<linalg::FillOp>(def))
    return scalar(fill.value());
  if (auto copy = dyn_cast<linalg::CopyOp>(def))
    return evalAt(copy.getInputs()[0], row, col);
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
    return memref::LoadOp::create(b, loc, buffers[slice.getSource()],
                                  sliceIndices(slice, row, col));
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(def)) {
    if (std::optional<unsigned> l = landingOf(insert);
        l && landingCurrent.count(*l)) {
      // Copied ahead, rows past the chunk's end zero-filled.
      return memref::LoadOp::create(b, loc, landingViews[*l],
                                    ValueRange{landingIndex(*l, row, col)});
    }
    // Token rows [0, len) of the chunk, the destination's elements below.
    auto slice = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
    Value length = scalar(insert.getMixedSizes()[0]);
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
    Value safeRow = arith::SelectOp::create(b, loc, inside, row, index(0));
    Value loaded = memref::LoadOp::create(b, loc, buffers[slice.getSource()],
                                          sliceIndices(slice, safeRow, col));
    return arith::SelectOp::create(b, loc, inside, loaded,
                                   evalAt(insert.getDest(), row, col));
  }
  auto generic = cast<linalg::GenericOp>(def);
  AffineMap outMap =
      generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  llvm::SmallVector<Value> ivs(generic.getNumLoops());
  ivs[outMap.getDimPosition(0)] = row;
  if (outMap.getNumResults() == 2)
    ivs[outMap.getDimPosition(1)] = col;
  return cloneBody(generic, ivs, [&](OpOperand &operand) {
    return evalOperand(generic, operand, ivs);
  })[0];
}

Value TileEmitter::evalOperand(linalg::GenericOp op, OpOperand &operand,
                               llvm::ArrayRef<Value> ivs) {
  // A row or column vector is read at one coordinate.
  AffineMap map = op.getMatchingIndexingMap(&operand);
  return evalAt(operand.get(), ivs[map.getDimPosition(0)],
                map.getNumResults() == 2 ? ivs[map.getDimPosition(1)]
                                         : Value());
}

llvm::SmallVector<Value> TileEmitter::evalRow8(Value tile, Value row,
                                               Value col0) {
  Operation *def = tile.getDefiningOp();
  llvm::SmallVector<Value> values;
  auto colAt = [&](int64_t j) -> Value {
    return arith::AddIOp::create(b, loc, col0, index(j));
  };
  auto insertForLanding = dyn_cast_or_null<tensor::InsertSliceOp>(def);
  if (std::optional<unsigned> l =
          insertForLanding ? landingOf(insertForLanding) : std::nullopt;
      l && landingCurrent.count(*l)) {
    auto type = VectorType::get({8}, b.getBF16Type());
    Value vec = vector::LoadOp::create(b, loc, type, landingViews[*l],
                                       ValueRange{landingIndex(*l, row, col0)},
                                       /*nontemporal=*/false,
                                       /*alignment=*/llvm::MaybeAlign(16));
    for (int64_t j = 0; j < 8; ++j)
      values.push_back(vector::ExtractOp::create(b, loc, vec, j));
    return values;
  }
  if (auto insert = dyn_cast_or_null<tensor::InsertSliceOp>(def)) {
    // One 16-byte load of the token row (a row before the chunk start when
    // past its end, selected away).
    auto slice = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
    Value length = scalar(insert.getMixedSizes()[0]);
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
    Value safeRow = arith::SelectOp::create(b, loc, inside, row, index(0));
    llvm::SmallVector<Value> loaded = loadRow8(
        buffers[slice.getSource()], sliceIndices(slice, safeRow, col0));
    for (int64_t j = 0; j < 8; ++j)
      values.push_back(arith::SelectOp::create(
          b, loc, inside, loaded[j], evalAt(insert.getDest(), row, colAt(j))));
    return values;
  }
  if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(def))
    return loadRow8(buffers[slice.getSource()], sliceIndices(slice, row, col0));
  auto generic = dyn_cast_or_null<linalg::GenericOp>(def);
  bool identity =
      generic && llvm::all_of(generic.getIndexingMapsArray(),
                              [](AffineMap m) { return m.isIdentity(); });
  if (identity) {
    llvm::DenseMap<Value, llvm::SmallVector<Value>> inputs;
    for (OpOperand &operand : generic->getOpOperands())
      if (!generic.getMatchingBlockArgument(&operand).use_empty())
        inputs[operand.get()] = evalRow8(operand.get(), row, col0);
    for (int64_t j = 0; j < 8; ++j) {
      Value col = colAt(j);
      values.push_back(cloneBody(generic, {row, col}, [&](OpOperand &operand) {
        return inputs[operand.get()][j];
      })[0]);
    }
    return values;
  }
  for (int64_t j = 0; j < 8; ++j)
    values.push_back(evalAt(tile, row, colAt(j)));
  return values;
}

Value TileEmitter::alignedOf(Value buffer) {
  Value &flag = alignment[buffer];
  if (!flag) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(windowAddress);
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    flag = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, address, index(16)), index(0));
  }
  return flag;
}

llvm::SmallVector<Value>
TileEmitter::loadElements8(Value buffer, llvm::ArrayRef<Value> indices,
                           Value inside) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  llvm::SmallVector<Value> elements;
  for (int64_t j = 0; j < 8; ++j) {
    llvm::SmallVector<Value> at(indices);
    at.back() = arith::AddIOp::create(b, loc, at.back(), index(j));
    Value v = memref::LoadOp::create(b, loc, buffer, at);
    if (inside)
      v = arith::SelectOp::create(
          b, loc, inside, v,
          arith::ConstantOp::create(b, loc, b.getZeroAttr(element)));
    elements.push_back(v);
  }
  return elements;
}

llvm::SmallVector<Value> TileEmitter::loadRow8(Value buffer,
                                               llvm::ArrayRef<Value> indices) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  auto type = VectorType::get({8}, element);
  auto branch = scf::IfOp::create(b, loc, TypeRange{type}, alignedOf(buffer),
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    Value vec = vector::LoadOp::create(b, loc, type, buffer, indices,
                                       /*nontemporal=*/false,
                                       /*alignment=*/llvm::MaybeAlign(16));
    scf::YieldOp::create(b, loc, vec);
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(
        b, loc,
        ValueRange{vector::FromElementsOp::create(
            b, loc, type, loadElements8(buffer, indices, Value()))});
  }
  llvm::SmallVector<Value> values;
  for (int64_t j = 0; j < 8; ++j)
    values.push_back(vector::ExtractOp::create(b, loc, branch.getResult(0), j));
  return values;
}

llvm::SmallVector<Value> TileEmitter::elements(Value tile) {
  auto it = fragmentOf.find(tile);
  if (it != fragmentOf.end()) {
    if (!fragments[it->second].pending.empty())
      waitAll();
    return fragments[it->second].elements;
  }
  int64_t cols = columns(tile);
  llvm::SmallVector<Value> values;
  for (int64_t i = 0; i < slotsOf(tile); ++i)
    values.push_back(evalAt(tile, slotRow(i, cols), slotCol(i, cols)));
  return values;
}

void TileEmitter::waitAll() {
  if (pendingFragments.empty())
    return;
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  for (unsigned id : pendingFragments) {
    Fragment &f = fragments[id];
    for (Value acc : f.pending)
      for (int64_t i = 0; i < plan.slots(kFragmentRows, f.cols); ++i)
        f.elements.push_back(LLVM::ExtractValueOp::create(
            b, loc, acc, llvm::ArrayRef<int64_t>{i}));
    f.pending.clear();
  }
  pendingFragments.clear();
}

void TileEmitter::barrier() {
  // Threads' (generic-proxy) writes are made visible to wgmma's async
  // proxy before the barrier.
  if (unknownState || !writtenSince.empty())
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
  writtenSince.clear();
  // Reads of wgmma still in flight stay pending past the barrier.
  if (pendingFragments.empty())
    readSince.clear();
  unknownState = false;
}

void TileEmitter::materialize(unsigned which) {
  const TilePlan::Staged &s = plan.staged[which];
  beforeWrite(which);
  Type bf16 = b.getBF16Type();
  Value view = stagedViews[which];
  auto toBF16 = [&](Value v) -> Value {
    if (v.getType() == bf16)
      return v;
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, bf16, v);
  };
  auto type = cast<RankedTensorType>(s.tile.getType());
  if (plan.of(s.tile) == Placement::Frag) {
    // A conversion by stmatrix: each 8 x 8 block of the fragment a warp
    // holds (rows 64 r + 16 w + 8 h of row block r, columns 8 j of its
    // warpgroup's share) is one core matrix of the copy, its rows 16
    // contiguous bytes. A thread's pair of slots (i, i + 1) of a row block
    // is its register of block (h = i / 2 % 2, j = i / 4); four blocks per
    // instruction.
    llvm::SmallVector<Value> values = elements(s.tile);
    int64_t share = columns(s.tile) / plan.warpgroups;
    int64_t blocks = share / 8;
    int64_t perBlock = plan.slots(kFragmentRows, columns(s.tile));
    auto i32 = b.getI32Type();
    auto pack = [&](int64_t i) -> Value {
      Value pair = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, bf16),
          ValueRange{toBF16(values[i]), toBF16(values[i + 1])});
      return vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair)
          .getResult();
    };
    auto scalarOf = [&](Value v) -> Value {
      return vector::ExtractOp::create(b, loc, v, 0);
    };
    Value laneRow = arith::RemUIOp::create(b, loc, lane, index(8));
    Value matrix = arith::DivUIOp::create(b, loc, lane, index(8));
    Value colBase = arith::MulIOp::create(b, loc, warpgroup, index(share));
    for (int64_t rowBlock = 0; rowBlock < type.getDimSize(0) / kFragmentRows;
         ++rowBlock) {
      for (int64_t j0 = 0; j0 < blocks; j0 += 2) {
        int64_t count = std::min<int64_t>(2, blocks - j0) * 2; // matrices
        llvm::SmallVector<Value> sources;
        for (int64_t m = 0; m < count; ++m)
          sources.push_back(scalarOf(
              pack(rowBlock * perBlock + 4 * (j0 + m / 2) + 2 * (m % 2))));
        // Lane l addresses row l % 8 of matrix l / 8 (h = m % 2,
        // j = j0 + m / 2).
        Value m = count == 4 ? matrix
                             : arith::RemUIOp::create(b, loc, matrix, index(2));
        Value r0 = arith::AddIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, warpInGroup, index(16)),
                index(rowBlock * kFragmentRows)),
            arith::MulIOp::create(
                b, loc, arith::RemUIOp::create(b, loc, m, index(2)), index(8)));
        Value c0 = arith::AddIOp::create(
            b, loc, colBase,
            arith::MulIOp::create(
                b, loc,
                arith::AddIOp::create(
                    b, loc, index(j0),
                    arith::DivUIOp::create(b, loc, m, index(2))),
                index(8)));
        Value element = groupedIndex(
            s.rows, arith::AddIOp::create(b, loc, r0, laneRow), c0);
        Value byte = arith::AddIOp::create(
            b, loc, index(s.offset),
            arith::MulIOp::create(b, loc, element, index(2)));
        Value address = arith::AddIOp::create(
            b, loc, windowAddress,
            arith::IndexCastUIOp::create(b, loc, b.getI64Type(), byte));
        Value pointer = LLVM::IntToPtrOp::create(
            b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
        NVVM::StMatrixOp::create(
            b, loc, pointer, sources,
            NVVM::MMALayoutAttr::get(b.getContext(), NVVM::MMALayout::row),
            NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
            NVVM::LdStMatrixEltTypeAttr::get(b.getContext(),
                                             NVVM::LdStMatrixEltType::B16));
      }
    }
  } else {
    // The block computes the tile 8 columns at a time (one 16-byte row of a
    // core matrix each); consecutive threads take consecutive rows.
    OpBuilder::InsertionGuard guard(b);
    auto [row, col0] = enterRowGroups(type);
    llvm::SmallVector<Value> values = evalRow8(s.tile, row, col0);
    for (Value &v : values)
      v = toBF16(v);
    Value vec = vector::FromElementsOp::create(
        b, loc, VectorType::get({8}, bf16), values);
    vector::StoreOp::create(b, loc, vec, view,
                            ValueRange{groupedIndex(s.rows, row, col0)},
                            /*nontemporal=*/false,
                            /*alignment=*/llvm::MaybeAlign(16));
  }
  writtenSince.insert(which);
  // Copies in the same bytes are gone.
  for (unsigned other = 0; other < plan.staged.size(); ++other)
    if (other != which && overlap(other, which))
      materialized.erase(other);
  materialized.insert(which);
}

void TileEmitter::stage(Operation *op, llvm::ArrayRef<unsigned> needed) {
  llvm::SmallVector<unsigned> batch;
  for (unsigned i : needed)
    if (!plan.staged[i].landing && !materialized.contains(i) &&
        !llvm::is_contained(batch, i))
      batch.push_back(i);
  if (batch.empty())
    return;
  // Later contractions' operands that are ready now: fragments already
  // computed, on-demand tiles whose inputs (tiles, and scalars read by their
  // bodies) all are.
  Block *block = op->getBlock();
  std::function<bool(Value)> ready = [&](Value v) -> bool {
    if (v.getParentBlock() != block)
      return true; // from an enclosing scope
    Operation *def = v.getDefiningOp();
    if (!def || def->isBeforeInBlock(op))
      return true;
    Placement p = plan.of(v);
    if (p == Placement::Empty)
      return true; // never read
    if (p == Placement::ScalarTensor && isa<linalg::GenericOp>(def))
      return false; // a reduction, emitted in program order
    if (p != Placement::Expr && p != Placement::ScalarTensor)
      return false; // fragments and scalars are emitted in program order
    bool inputsReady = true;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (!def->isAncestor(operand.getParentRegion()->getParentOp()) &&
            !ready(operand))
          inputsReady = false;
    });
    return inputsReady;
  };
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode()) {
    auto generic = dyn_cast<linalg::GenericOp>(next);
    if (!generic || !matchContraction(generic) ||
        plan.of(generic.getResult(0)) != Placement::Frag)
      continue;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      std::optional<unsigned> i = plan.stagedIndex(input->get());
      if (i && !plan.staged[*i].landing && !materialized.contains(*i) &&
          !llvm::is_contained(batch, *i) && ready(input->get()))
        batch.push_back(*i);
    }
  }
  for (unsigned i : batch)
    materialize(i);
}

TileEmitter::Operand TileEmitter::operandOf(unsigned staged, bool kIsRow) {
  const TilePlan::Staged &s = plan.staged[staged];
  Operand operand;
  operand.mnMajor = kIsRow;
  operand.base = windowAddress;
  operand.offset = s.offset;
  if (s.landing) {
    // The current buffer of the pair, two bytes per element.
    operand.offset = plan.landing[*s.landing].offset;
    operand.base = arith::AddIOp::create(
        b, loc, windowAddress,
        arith::IndexCastUIOp::create(
            b, loc, b.getI64Type(),
            arith::MulIOp::create(b, loc, landingCurrent[*s.landing],
                                  index(2))));
  }
  // Core matrices adjacent in the tile's rows are 16 x 8 = 128 bytes
  // apart, in its columns groupBytes: K-major (K the columns) the
  // leading stride is the column groups', MN-major the rows'.
  operand.kGroupBytes = kIsRow ? 128 : s.columnGroupBytes();
  operand.mnGroupBytes = kIsRow ? s.columnGroupBytes() : 128;
  return operand;
}

void TileEmitter::emitContraction(linalg::GenericOp op) {
  MLIRContext *ctx = b.getContext();
  ContractionDims dims = *matchContraction(op);
  AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  unsigned mLoop = mapC.getDimPosition(0);
  auto out = cast<RankedTensorType>(op.getResult(0).getType());
  int64_t n = out.getDimSize(1);
  unsigned stagedA = 0, stagedB = 0;
  bool kIsRowA = false, kIsRowB = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    unsigned i = *plan.stagedIndex(input->get());
    bool kIsRow = map.getDimPosition(0) == dims.k;
    if (map.isFunctionOfDim(mLoop)) {
      stagedA = i;
      kIsRowA = kIsRow;
    } else {
      stagedB = i;
      kIsRowB = kIsRow;
    }
  }
  stage(op, {stagedA, stagedB});
  beforeRead(stagedA);
  beforeRead(stagedB);
  Operand a = operandOf(stagedA, kIsRowA), bOp = operandOf(stagedB, kIsRowB);

  // The accumulator starts from C's initial value (zero for a zero fill).
  Value init = op.getDpsInitOperand(0)->get();
  llvm::SmallVector<Value> start;
  auto fill = init.getDefiningOp<linalg::FillOp>();
  int64_t count = plan.slots(out.getDimSize(0), n);
  int64_t perBlock = plan.slots(kFragmentRows, n);
  // Each warpgroup computes its share of C's columns: B from warpgroup g's
  // first N group on.
  int64_t share = n / plan.warpgroups;
  if (plan.warpgroups > 1)
    bOp.base = arith::AddIOp::create(
        b, loc, bOp.base,
        arith::MulIOp::create(
            b, loc,
            arith::IndexCastUIOp::create(b, loc, b.getI64Type(), warpgroup),
            arith::ConstantIntOp::create(b, loc, share / 8 * bOp.mnGroupBytes,
                                         64)));
  if (fill && matchPattern(fill.value(), m_AnyZeroFloat())) {
    Value z = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    start.assign(count, z);
  } else {
    start = elements(init);
    for (Value &v : start)
      if (!v.getType().isF32())
        v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  Type f32 = b.getF32Type();
  Type accType = LLVM::LLVMStructType::getLiteral(
      ctx, llvm::SmallVector<Type>(perBlock, f32));
  Fragment f = Fragment::of(op.getResult(0));
  auto descriptor = [&](const Operand &operand, int64_t k0, int64_t mn0) {
    return wgmmaDescriptorStrides(b, loc, operand.base,
                                  operand.offset +
                                      (k0 / 8) * operand.kGroupBytes +
                                      (mn0 / 8) * operand.mnGroupBytes,
                                  operand.kGroupBytes, operand.mnGroupBytes);
  };
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  // One chain of wgmma per 64-row block of C, from A's rows of the block.
  for (int64_t rowBlock = 0; rowBlock * kFragmentRows < out.getDimSize(0);
       ++rowBlock) {
    Value acc = LLVM::UndefOp::create(b, loc, accType);
    for (int64_t i = 0; i < perBlock; ++i)
      acc = LLVM::InsertValueOp::create(b, loc, acc,
                                        start[rowBlock * perBlock + i],
                                        llvm::ArrayRef<int64_t>{i});
    for (int64_t k0 = 0; k0 < dims.sizeK; k0 += 16) {
      Value descA = descriptor(a, k0, rowBlock * kFragmentRows);
      Value descB = descriptor(bOp, k0, 0);
      acc = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, accType, acc, descA, descB,
          NVVM::MMAShapeAttr::get(ctx, kFragmentRows, share, 16),
          NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32,
          NVVM::WGMMAScaleOut::one, NVVM::WGMMAScaleIn::one,
          NVVM::WGMMAScaleIn::one,
          // A is M x K row-major unless transposed, B K x N column-major.
          a.mnMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          bOp.mnMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col,
          /*satfinite=*/nullptr);
    }
    f.pending.push_back(acc);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  readSince.insert(stagedA);
  readSince.insert(stagedB);
  setFragment(op.getResult(0), f);
  pendingFragments.push_back(fragmentOf[op.getResult(0)]);
}

void TileEmitter::emitElementwise(linalg::GenericOp op) {
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  int64_t cols =
      cast<RankedTensorType>(op.getResult(0).getType()).getDimSize(1);
  llvm::DenseMap<Value, llvm::SmallVector<Value>> fragmentInputs;
  for (OpOperand &operand : op->getOpOperands())
    if (!op.getMatchingBlockArgument(&operand).use_empty() &&
        plan.of(operand.get()) == Placement::Frag)
      fragmentInputs[operand.get()] = elements(operand.get());
  Fragment f = Fragment::of(op.getResult(0));
  for (int64_t i = 0; i < slotsOf(op.getResult(0)); ++i) {
    llvm::SmallVector<Value> ivs(2);
    ivs[outMap.getDimPosition(0)] = slotRow(i, cols);
    ivs[outMap.getDimPosition(1)] = slotCol(i, cols);
    f.elements.push_back(cloneBody(op, ivs, [&](OpOperand &operand) {
      auto it = fragmentInputs.find(operand.get());
      if (it != fragmentInputs.end())
        return it->second[i];
      return evalOperand(op, operand, ivs);
    })[0]);
  }
  setFragment(op.getResult(0), f);
}

void TileEmitter::emitRows(tensor::InsertSliceOp op) {
  auto prefix = op.getSource().getDefiningOp<tensor::ExtractSliceOp>();
  tensor::ExtractSliceOp slice = plan.rowsSlice.lookup(op.getDest());
  Value rowOffset = scalar(op.getMixedOffsets()[0]);
  Value colOffset = scalar(op.getMixedOffsets()[1]);
  emitTileRows(prefix.getSource(), scalar(op.getMixedSizes()[0]),
               buffers[slice.getSource()], [&](Value row, Value col) {
                 return sliceIndices(
                     slice, arith::AddIOp::create(b, loc, rowOffset, row),
                     arith::AddIOp::create(b, loc, colOffset, col));
               });
}

void TileEmitter::emitRows(tensor::ParallelInsertSliceOp op) {
  Value tile = op.getSource();
  Value length = index(op.getSourceType().getDimSize(0));
  if (plan.of(tile) == Placement::Prefix) {
    auto prefix = tile.getDefiningOp<tensor::ExtractSliceOp>();
    tile = prefix.getSource();
    length = scalar(prefix.getMixedSizes()[0]);
  }
  llvm::SmallBitVector dropped = op.getDroppedDims();
  llvm::SmallVector<OpFoldResult> offsets = op.getMixedOffsets();
  emitTileRows(tile, length, buffers[op.getDest()], [&](Value row, Value col) {
    return indicesAt(offsets, dropped, row, col);
  });
}

void TileEmitter::emitTileRows(
    Value tile, Value length, Value buffer,
    llvm::function_ref<llvm::SmallVector<Value>(Value, Value)> indices) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  auto convert = [&](Value v) -> Value {
    if (v.getType() == element)
      return v;
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return element.isF32() ? v : arith::TruncFOp::create(b, loc, element, v);
  };
  if (plan.of(tile) == Placement::Frag) {
    llvm::SmallVector<Value> values = elements(tile);
    int64_t cols = columns(tile);
    int64_t perBlock = plan.slots(kFragmentRows, cols);
    // Per row block, the thread's two rows: slots 0, 1 mod 4 and 2, 3.
    for (int64_t first = 0; first < int64_t(values.size()); first += 2) {
      if (first % perBlock >= 4)
        continue;
      Value row = slotRow(first, cols);
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
      auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      int64_t end = (first / perBlock + 1) * perBlock;
      for (int64_t i = first; i < end; i += 4) {
        Value pair = vector::FromElementsOp::create(
            b, loc, VectorType::get({2}, element),
            ValueRange{convert(values[i]), convert(values[i + 1])});
        vector::StoreOp::create(
            b, loc, pair, buffer, indices(row, slotCol(i, cols)),
            /*nontemporal=*/false,
            /*alignment=*/
            llvm::MaybeAlign(2 * element.getIntOrFloatBitWidth() / 8));
      }
    }
    return;
  }
  // An on-demand tile: the block stores it 8 columns at a time.
  auto type = cast<RankedTensorType>(tile.getType());
  OpBuilder::InsertionGuard guard(b);
  auto [row, col0] = enterRowGroups(type);
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
  auto ifInside = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPoint(ifInside.thenBlock()->getTerminator());
  llvm::SmallVector<Value> values = evalRow8(tile, row, col0);
  for (Value &v : values)
    v = convert(v);
  Value vec = vector::FromElementsOp::create(
      b, loc, VectorType::get({8}, element), values);
  vector::StoreOp::create(
      b, loc, vec, buffer, indices(row, col0),
      /*nontemporal=*/false,
      /*alignment=*/llvm::MaybeAlign(8 * element.getIntOrFloatBitWidth() / 8));
}

Value TileEmitter::cloneAt(Value v, scf::ForOp loop, IRMapping &mapping) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody())
    return scalar(v);
  for (Value operand : def->getOperands())
    mapping.map(operand, cloneAt(operand, loop, mapping));
  b.clone(*def, mapping);
  return mapping.lookup(v);
}

void TileEmitter::issueLanding(unsigned l, scf::ForOp loop, Value iv,
                               Value base) {
  const TilePlan::Landing &landing = plan.landing[l];
  tensor::InsertSliceOp insert = landing.tokens;
  auto slice = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
  IRMapping mapping;
  mapping.map(loop.getInductionVar(), iv);
  llvm::SmallVector<OpFoldResult> offsets;
  for (OpFoldResult offset : slice.getMixedOffsets())
    offsets.push_back(
        isa<Value>(offset)
            ? OpFoldResult(cloneAt(cast<Value>(offset), loop, mapping))
            : offset);
  OpFoldResult size = insert.getMixedSizes()[0];
  Value length = isa<Value>(size) ? cloneAt(cast<Value>(size), loop, mapping)
                                  : scalar(size);
  // Consecutive threads take consecutive 16 bytes of a row (coalesced).
  int64_t groups = landing.cols / 8;
  auto copies = scf::ForOp::create(
      b, loc, threadId, index(landing.rows * groups), index(plan.threads()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(copies.getBody()->getTerminator());
  Value unit = copies.getInductionVar();
  Value row = arith::DivUIOp::create(b, loc, unit, index(groups));
  Value col = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, unit, index(groups)), index(8));
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
  Value safeRow = arith::SelectOp::create(b, loc, inside, row, index(0));
  // Rows past the chunk's end: nothing read, 16 zero bytes written.
  Value elements = arith::SelectOp::create(b, loc, inside, index(8), index(0));
  Value at =
      arith::AddIOp::create(b, loc, base, groupedIndex(landing.rows, row, col));
  Value source = buffers[slice.getSource()];
  llvm::SmallVector<Value> from =
      indicesAt(offsets, slice.getDroppedDims(), safeRow, col);
  // cp.async moves 16 aligned bytes; tokens a view leaves off a 16-byte
  // boundary are read element by element instead (synchronously: the
  // chunk's opening barrier orders them like the copies).
  auto aligned = scf::IfOp::create(b, loc, alignedOf(source),
                                   /*withElseRegion=*/true);
  b.setInsertionPoint(aligned.thenBlock()->getTerminator());
  nvgpu::DeviceAsyncCopyOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), landingViews[l],
      ValueRange{at}, source, from, b.getIndexAttr(8), elements,
      b.getUnitAttr());
  b.setInsertionPoint(aligned.elseBlock()->getTerminator());
  llvm::SmallVector<Value> values = loadElements8(source, from, inside);
  vector::StoreOp::create(
      b, loc,
      vector::FromElementsOp::create(
          b, loc, VectorType::get({8}, b.getBF16Type()), values),
      landingViews[l], ValueRange{at}, /*nontemporal=*/false,
      /*alignment=*/llvm::MaybeAlign(16));
}

void TileEmitter::emitLoop(scf::ForOp loop) {
  waitAll();
  // Token rows copied a chunk ahead: the first chunk's before the loop.
  llvm::SmallVector<unsigned> landings;
  for (auto [i, l] : llvm::enumerate(plan.landing))
    if (l.tokens->getParentOp() == loop)
      landings.push_back(i);
  for (unsigned l : landings)
    issueLanding(l, loop, scalar(loop.getLowerBound()), index(0));
  if (!landings.empty())
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  llvm::SmallVector<Value> inits;
  llvm::SmallVector<std::pair<unsigned, int64_t>> carried; // arg, elements
  for (auto [i, init] : llvm::enumerate(loop.getInitArgs())) {
    Placement p = plan.of(loop.getRegionIterArgs()[i]);
    if (p != Placement::Frag && p != Placement::ScalarTensor)
      continue;
    // A 0-d value (a decay's running product) is one scalar.
    llvm::SmallVector<Value> values =
        p == Placement::Frag ? elements(init)
                             : llvm::SmallVector<Value>{zeroDim(init)};
    carried.push_back({unsigned(i), int64_t(values.size())});
    llvm::append_range(inits, values);
  }
  auto newLoop = scf::ForOp::create(b, loc, scalar(loop.getLowerBound()),
                                    scalar(loop.getUpperBound()),
                                    scalar(loop.getStep()), inits);
  Block *body = newLoop.getBody();
  if (body->mightHaveTerminator())
    b.setInsertionPoint(body->getTerminator());
  else
    b.setInsertionPointToEnd(body);
  scalars.map(loop.getInductionVar(), newLoop.getInductionVar());
  int64_t next = 0;
  for (auto [arg, count] : carried) {
    Value iterArg = loop.getRegionIterArgs()[arg];
    if (plan.of(iterArg) == Placement::ScalarTensor) {
      reduced[iterArg] = body->getArgument(1 + next++);
      continue;
    }
    Fragment f = Fragment::of(iterArg);
    for (int64_t j = 0; j < count; ++j)
      f.elements.push_back(body->getArgument(1 + next++));
    setFragment(iterArg, f);
  }
  // What the previous iteration left in shared memory is unknown here.
  llvm::DenseSet<unsigned> outside = materialized;
  unknownState = true;
  if (!landings.empty()) {
    // This chunk's rows have landed (this thread's copies, then everyone's);
    // the next chunk's go to the other buffer, last read before this
    // barrier.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    barrier();
    Value iv = newLoop.getInductionVar();
    Value lb = scalar(loop.getLowerBound()), step = scalar(loop.getStep());
    Value parity = arith::RemUIOp::create(
        b, loc,
        arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, lb),
                               step),
        index(2));
    Value next = arith::AddIOp::create(b, loc, iv, step);
    Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next,
                                       scalar(loop.getUpperBound()));
    auto ahead = scf::IfOp::create(b, loc, more, /*withElseRegion=*/false);
    for (unsigned l : landings) {
      int64_t size = plan.landing[l].bufferBytes() / 2; // elements
      landingCurrent[l] = arith::MulIOp::create(b, loc, parity, index(size));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ahead.thenBlock()->getTerminator());
      Value other = arith::MulIOp::create(
          b, loc, arith::SubIOp::create(b, loc, index(1), parity), index(size));
      issueLanding(l, loop, next, other);
    }
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  emitBlock(*loop.getBody());
  for (unsigned l : landings)
    landingCurrent.erase(l);
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  llvm::SmallVector<Value> yielded;
  for (auto [arg, count] : carried) {
    if (plan.of(loop.getRegionIterArgs()[arg]) == Placement::ScalarTensor)
      yielded.push_back(zeroDim(yield.getOperand(arg)));
    else
      llvm::append_range(yielded, elements(yield.getOperand(arg)));
  }
  waitAll();
  if (body->mightHaveTerminator())
    body->getTerminator()->erase();
  b.setInsertionPointToEnd(body);
  scf::YieldOp::create(b, loc, yielded);
  b.setInsertionPointAfter(newLoop);
  next = 0;
  for (auto [arg, count] : carried) {
    if (plan.of(loop.getResult(arg)) == Placement::ScalarTensor) {
      reduced[loop.getResult(arg)] = newLoop.getResult(next++);
      continue;
    }
    Fragment f = Fragment::of(loop.getResult(arg));
    for (int64_t j = 0; j < count; ++j)
      f.elements.push_back(newLoop.getResult(next++));
    setFragment(loop.getResult(arg), f);
  }
  materialized = outside;
  unknownState = true;
}

void TileEmitter::emitReduction(linalg::GenericOp op) {
  Value init = zeroDim(op.getDpsInitOperand(0)->get());
  Type type = init.getType();
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto scratch = memref::ViewOp::create(
      b, loc,
      MemRefType::get({plan.threads() / 32}, type, AffineMap(),
                      workgroupSpace(b.getContext())),
      window, index(plan.reductionScratch.lookup(op)), ValueRange{});
  // The scratch words were read after the last barrier of a previous
  // iteration, perhaps.
  if (unknownState)
    barrier();
  auto at = [&](OpOperand &operand, llvm::ArrayRef<Value> ivs) {
    return evalOperand(op, operand, ivs);
  };
  if (!isSum(op)) {
    // One thread folds the elements in order (a rare path: causal
    // isolation's search for the first non-finite token).
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        threadId, index(0));
    auto once = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(once.thenBlock()->getTerminator());
      auto rows = scf::ForOp::create(b, loc, index(0), index(ranges[0]),
                                     index(1), ValueRange{init});
      b.setInsertionPointToStart(rows.getBody());
      auto cols =
          scf::ForOp::create(b, loc, index(0), index(ranges[1]), index(1),
                             ValueRange{rows.getRegionIterArg(0)});
      b.setInsertionPointToStart(cols.getBody());
      llvm::SmallVector<Value> ivs = {rows.getInductionVar(),
                                      cols.getInductionVar()};
      Value next = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return cols.getRegionIterArg(0);
        return at(operand, ivs);
      })[0];
      scf::YieldOp::create(b, loc, next);
      b.setInsertionPointAfter(cols);
      scf::YieldOp::create(b, loc, cols.getResult(0));
      b.setInsertionPointAfter(rows);
      memref::StoreOp::create(b, loc, rows.getResult(0), scratch,
                              ValueRange{index(0)});
    }
    barrier();
    reduced[op.getResult(0)] =
        memref::LoadOp::create(b, loc, scratch, ValueRange{index(0)});
    return;
  }
  // A sum: each thread adds its share into a partial sum (from 0), warps
  // add theirs by shuffles, and the warps' sums (four per warpgroup) are
  // added to the initial value in a fixed order.
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  Value partial = zero;
  bool fragments = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
    return plan.of(in->get()) == Placement::Frag;
  });
  if (fragments) {
    llvm::DenseMap<Value, llvm::SmallVector<Value>> values;
    for (OpOperand *in : op.getDpsInputOperands())
      if (plan.of(in->get()) == Placement::Frag)
        values[in->get()] = elements(in->get());
    for (int64_t i = 0; i < plan.slots(ranges[0], ranges[1]); ++i) {
      llvm::SmallVector<Value> ivs = {slotRow(i, ranges[1]),
                                      slotCol(i, ranges[1])};
      partial = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return partial;
        auto it = values.find(operand.get());
        return it != values.end() ? it->second[i] : at(operand, ivs);
      })[0];
    }
  } else {
    int64_t rows = ranges[0], groups = ranges[1] / 8;
    auto loop = scf::ForOp::create(b, loc, threadId, index(rows * groups),
                                   index(plan.threads()), ValueRange{zero});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value unit = loop.getInductionVar();
    Value row = arith::RemUIOp::create(b, loc, unit, index(rows));
    Value col0 = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, unit, index(rows)), index(8));
    bool identity = llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *in) {
      return op.getMatchingIndexingMap(in).isIdentity();
    });
    llvm::DenseMap<Value, llvm::SmallVector<Value>> values;
    if (identity)
      for (OpOperand *in : op.getDpsInputOperands())
        values[in->get()] = evalRow8(in->get(), row, col0);
    Value running = loop.getRegionIterArg(0);
    for (int64_t j = 0; j < 8; ++j) {
      llvm::SmallVector<Value> ivs = {
          row, arith::AddIOp::create(b, loc, col0, index(j))};
      running = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return running;
        return identity ? values[operand.get()][j] : at(operand, ivs);
      })[0];
    }
    scf::YieldOp::create(b, loc, running);
    b.setInsertionPointAfter(loop);
    partial = loop.getResult(0);
  }
  Value width = arith::ConstantIntOp::create(b, loc, 32, 32);
  for (int64_t offset : {16, 8, 4, 2, 1}) {
    Value other =
        gpu::ShuffleOp::create(b, loc, partial,
                               arith::ConstantIntOp::create(b, loc, offset, 32),
                               width, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    partial = arith::AddFOp::create(b, loc, partial, other);
  }
  Value warpInBlock = arith::DivUIOp::create(b, loc, threadId, index(32));
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
  auto write = scf::IfOp::create(b, loc, leader, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(write.thenBlock()->getTerminator());
    memref::StoreOp::create(b, loc, partial, scratch, ValueRange{warpInBlock});
  }
  barrier();
  Value total = init;
  for (int64_t w = 0; w < plan.threads() / 32; ++w)
    total = arith::AddFOp::create(
        b, loc, total,
        memref::LoadOp::create(b, loc, scratch, ValueRange{index(w)}));
  reduced[op.getResult(0)] = total;
}

void TileEmitter::emitIf(scf::IfOp op) {
  waitAll();
  llvm::SmallVector<Type> types;
  llvm::SmallVector<int64_t> counts;
  for (Value result : op.getResults()) {
    auto tile = dyn_cast<RankedTensorType>(result.getType());
    int64_t count =
        tile ? plan.slots(tile.getDimSize(0), tile.getDimSize(1)) : 1;
    counts.push_back(count);
    types.append(count, tile ? tile.getElementType() : result.getType());
  }
  auto branch = scf::IfOp::create(b, loc, types, scalar(op.getCondition()),
                                  /*withElseRegion=*/op.elseBlock() != nullptr);
  SyncState before = saveSync();
  auto emitSide = [&](Block *from, Block *to) {
    OpBuilder::InsertionGuard guard(b);
    if (to->mightHaveTerminator())
      b.setInsertionPoint(to->getTerminator());
    else
      b.setInsertionPointToEnd(to);
    restoreSync(before);
    emitBlock(*from);
    llvm::SmallVector<Value> yielded;
    for (Value v : from->getTerminator()->getOperands()) {
      if (isa<RankedTensorType>(v.getType()))
        llvm::append_range(yielded, elements(v));
      else
        yielded.push_back(scalar(v));
    }
    waitAll();
    if (to->mightHaveTerminator())
      to->getTerminator()->erase();
    b.setInsertionPointToEnd(to);
    scf::YieldOp::create(b, loc, yielded);
  };
  emitSide(op.thenBlock(), branch.thenBlock());
  if (op.elseBlock())
    emitSide(op.elseBlock(), branch.elseBlock());
  restoreSync(before);
  unknownState = true; // what either side left is not known here
  int64_t next = 0;
  for (auto [result, count] : llvm::zip(op.getResults(), counts)) {
    if (!isa<RankedTensorType>(result.getType())) {
      scalars.map(result, branch.getResult(next++));
      continue;
    }
    Fragment f = Fragment::of(result);
    for (int64_t j = 0; j < count; ++j)
      f.elements.push_back(branch.getResult(next++));
    setFragment(result, f);
  }
}

void TileEmitter::emitOp(Operation *op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    if (plan.of(generic.getResult(0)) == Placement::ScalarTensor &&
        generic.getNumLoops() == 0) {
      // 0-d arithmetic: every thread computes the one value.
      reduced[generic.getResult(0)] =
          cloneBody(generic, {}, [&](OpOperand &operand) {
            return zeroDim(operand.get());
          })[0];
      return;
    }
    if (plan.of(generic.getResult(0)) == Placement::ScalarTensor)
      return emitReduction(generic);
    if (plan.of(generic.getResult(0)) != Placement::Frag)
      return;
    if (matchContraction(generic))
      return emitContraction(generic);
    return emitElementwise(generic);
  }
  if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
    if (plan.of(copy.getResult(0)) == Placement::ScalarTensor) {
      reduced[copy.getResult(0)] = zeroDim(copy.getInputs()[0]);
      return;
    }
    auto it = fragmentOf.find(copy.getInputs()[0]);
    if (it != fragmentOf.end())
      fragmentOf[copy.getResult(0)] = it->second;
    return;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    if (plan.of(insert.getResult()) == Placement::Rows)
      emitRows(insert);
    return;
  }
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return emitLoop(loop);
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return emitIf(branch);
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    scalars.map(extract.getResult(), zeroDim(extract.getTensor()));
    return;
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
      slice && plan.of(slice.getResult()) == Placement::ScalarTensor) {
    // A 0-d state an earlier kernel wrote: every thread reads it.
    llvm::SmallVector<Value> indices;
    for (OpFoldResult offset : slice.getMixedOffsets())
      indices.push_back(
          scalar(getValueOrCreateConstantIndexOp(b, loc, offset)));
    reduced[slice.getResult()] =
        memref::LoadOp::create(b, loc, buffers[slice.getSource()], indices);
    return;
  }
  if (isa<scf::YieldOp, tensor::ExtractSliceOp, tensor::EmptyOp, linalg::FillOp,
          tensor::FromElementsOp>(op))
    return;
  if (llvm::any_of(op->getResults(),
                   [&](Value r) { return plan.of(r) != Placement::Scalar; }))
    return;
  for (Value operand : op->getOperands())
    scalar(operand);
  b.clone(*op, scalars);
}

void TileEmitter::emitBlock(Block &block) {
  for (Operation &op : block.without_terminator())
    emitOp(&op);
}

void TileEmitter::run() {
  scf::ForallOp forall = plan.forall;
  MLIRContext *ctx = b.getContext();
  // Global memory: the function's tensors as buffers, a fresh buffer per
  // shared output (the loop's results).
  forall.getBody()->walk([&](tensor::ExtractSliceOp slice) {
    Value source = slice.getSource();
    if (!isa<FunctionOpInterface>(source.getParentRegion()->getParentOp()) ||
        buffers.count(source))
      return;
    auto type = cast<RankedTensorType>(source.getType());
    buffers[source] = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()), source,
        /*read_only=*/true);
  });
  llvm::SmallVector<Value> results;
  for (auto [init, arg] :
       llvm::zip(forall.getOutputs(), forall.getRegionIterArgs())) {
    auto type = cast<RankedTensorType>(init.getType());
    Value buffer = memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()));
    buffers[arg] = buffer;
    results.push_back(bufferization::ToTensorOp::create(
        b, loc, type, buffer, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr()));
  }

  llvm::SmallVector<int64_t> bounds;
  int64_t blocks = 1;
  for (OpFoldResult ub : forall.getMixedUpperBound()) {
    bounds.push_back(*getConstantIntValue(ub));
    blocks *= bounds.back();
  }
  Value one = index(1);
  Value sharedBytes =
      arith::ConstantIntOp::create(b, loc, plan.sharedBytes, 32);
  auto launch =
      gpu::LaunchOp::create(b, loc, index(blocks), one, one,
                            index(plan.threads()), one, one, sharedBytes);
  kernelEntry = &launch.getBody().front();
  b.setInsertionPointToStart(kernelEntry);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(kernelEntry);

  // The forall's induction variables, row-major from the block index.
  Value linear = launch.getBlockIds().x;
  for (size_t d = bounds.size(); d-- > 0;) {
    Value iv = linear;
    if (d > 0) {
      iv = arith::RemUIOp::create(b, loc, linear, index(bounds[d]));
      linear = arith::DivUIOp::create(b, loc, linear, index(bounds[d]));
    }
    scalars.map(forall.getInductionVars()[d], iv);
  }
  threadId = launch.getThreadIds().x;
  lane = arith::RemUIOp::create(b, loc, threadId, index(32));
  warpInGroup = arith::RemUIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, threadId, index(32)), index(4));
  warpgroup = arith::DivUIOp::create(b, loc, threadId, index(kTileThreads));
  rowLo = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, warpInGroup, index(16)),
      arith::DivUIOp::create(b, loc, lane, index(4)));
  pairCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, index(4)), index(2));
  window = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                      workgroupSpace(ctx)));
  windowAddress = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, window));
  for (const TilePlan::Staged &s : plan.staged)
    stagedViews.push_back(
        s.landing ? Value()
                  : Value(memref::ViewOp::create(
                        b, loc,
                        MemRefType::get({s.bytes() / 2}, b.getBF16Type(),
                                        AffineMap(), workgroupSpace(ctx)),
                        window, index(s.offset), ValueRange{})));

  for (const TilePlan::Landing &l : plan.landing)
    landingViews.push_back(memref::ViewOp::create(
        b, loc,
        MemRefType::get({l.bufferBytes()}, b.getBF16Type(), AffineMap(),
                        workgroupSpace(ctx)),
        window, index(l.offset), ValueRange{}));

  emitBlock(*forall.getBody());
  for (Operation &op : forall.getTerminator().getYieldingOps()) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op);
    if (!insert)
      continue;
    if (plan.of(insert.getSource()) == Placement::ScalarTensor) {
      // A 0-d state (a run's decay): the first thread stores it.
      Value value = zeroDim(insert.getSource());
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          threadId, index(0));
      auto once = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(once.thenBlock()->getTerminator());
      llvm::SmallVector<Value> indices;
      for (OpFoldResult offset : insert.getMixedOffsets())
        indices.push_back(
            scalar(getValueOrCreateConstantIndexOp(b, loc, offset)));
      memref::StoreOp::create(b, loc, value, buffers[insert.getDest()],
                              indices);
      continue;
    }
    if (plan.of(insert.getSource()) != Placement::Rows)
      emitRows(insert);
  }
  waitAll();
  forall.replaceAllUsesWith(results);
  forall.erase();
}

void mlir::hla::gpumap::lowerRegisterTiles(TilePlan &plan) {
  TileEmitter(plan).run();
}

namespace {

/// A launch reads and writes every buffer it is given.
struct LaunchFuncEffects
    : public MemoryEffectOpInterface::ExternalModel<LaunchFuncEffects,
                                                    gpu::LaunchFuncOp> {
  void getEffects(
      Operation *op,
      llvm::SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
          &effects) const {
    // Kernels write through their buffer operands, and may touch memory
    // they reach otherwise (globals, the stream's state): effects on the
    // default resource too, so that nothing deems a launch dead.
    effects.emplace_back(MemoryEffects::Read::get());
    effects.emplace_back(MemoryEffects::Write::get());
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<BaseMemRefType>(operand.get().getType()))
        continue;
      effects.emplace_back(MemoryEffects::Read::get(), &operand);
      effects.emplace_back(MemoryEffects::Write::get(), &operand);
    }
  }
};

} // namespace

void mlir::hla::registerHLAGPUInterfaceModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, gpu::GPUDialect *) {
    gpu::LaunchFuncOp::attachInterface<LaunchFuncEffects>(*ctx);
  });
}

namespace {

struct HLAGPULowerRegisterTilesPass
    : public hla::impl::HLAGPULowerRegisterTilesPassBase<
          HLAGPULowerRegisterTilesPass> {
  using HLAGPULowerRegisterTilesPassBase::HLAGPULowerRegisterTilesPassBase;

  void runOnOperation() override {
    if (warpgroups < 0 || warpgroups > 2) {
      getOperation().emitError()
          << "hla-gpu-lower-register-tiles: warpgroups must be 0 (auto), 1 or "
             "2, got "
          << static_cast<int64_t>(warpgroups);
      return signalPassFailure();
    }
    if (generator != "auto" && generator != "tiles") {
      getOperation().emitError()
          << "hla-gpu-lower-register-tiles: generator must be auto or tiles, "
             "got '"
          << generator << "'";
      return signalPassFailure();
    }
    llvm::SmallVector<scf::ForallOp> loops(
        getOperation().getBody().getOps<scf::ForallOp>());
    for (scf::ForallOp forall : loops) {
      // Rewritten on a copy, kept only if the copy can be placed: the
      // phase mapper transposes in shared memory for free.
      OpBuilder builder(forall);
      auto candidate = cast<scf::ForallOp>(builder.clone(*forall));
      transposeProductReads(candidate);
      sinkIntoBranches(candidate);
      std::string why;
      std::optional<TilePlan> plan = planRegisterTiles(candidate, why);
      if (plan) {
        orderForRegisterPressure(*plan);
        // Copies share bytes only where they must: sharing adds waits and
        // barriers before rewrites (hla2 with isolation at 32 value
        // columns then spills 8 bytes).
        if (plan->sharedBytes > maxSharedMemory)
          shareSharedMemory(*plan);
      }
      if (plan && plan->sharedBytes > maxSharedMemory) {
        why = llvm::formatv("its tiles' shared-memory copies and buffers "
                            "need {0} bytes, more than the {1} of a block",
                            plan->sharedBytes, maxSharedMemory)
                  .str();
        plan.reset();
      }
      if (plan) {
        forall->replaceAllUsesWith(candidate);
        forall->erase();
      } else {
        candidate->erase();
      }
      if (!plan) {
        if (generator == "tiles") {
          forall.emitOpError("hla-gpu-lower-register-tiles: cannot keep this "
                             "loop's tiles in registers: ")
              << why;
          return signalPassFailure();
        }
        if (report)
          forall.emitRemark("left to hla-gpu-map-chunk-loops: ") << why;
        continue;
      }
      if (failed(chooseWarpgroups(*plan, warpgroups, why))) {
        plan->forall.emitOpError("hla-gpu-lower-register-tiles: ") << why;
        return signalPassFailure();
      }
      if (report)
        plan->forall.emitRemark(plan->summary());
      lowerRegisterTiles(*plan);
    }
  }
};

} // namespace
