//===- TileEmitter.h - Emitting a placed chunk loop -------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The emitter of hla-gpu-lower-register-tiles (RegisterTiles.h), shared by
// its two files:
//
//   LowerRegisterTiles.cpp  the launch, op by op: loops, branches,
//                           contractions, elementwise ops, reductions;
//   TileMemory.cpp          tiles in memory: on-demand reads, shared-memory
//                           copies of operands, token rows landing a chunk
//                           ahead, output rows stored from fragments.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_GPU_TILEEMITTER_H
#define HLA_LIB_DIALECT_HLA_GPU_TILEEMITTER_H

#include "ChunkLoopMapper.h"
#include "RegisterTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"

#include <functional>

namespace mlir::hla::gpumap {

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
  LogicalResult run();

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
  /// The row-vector value of fragment slot `i` of a tile of `cols`
  /// columns: its row's (two rows of each 64-row block per thread).
  int64_t rowSlot(int64_t i, int64_t cols) {
    int64_t perBlock = plan.slots(kFragmentRows, cols);
    return 2 * (i / perBlock) + (i % perBlock / 2) % 2;
  }
  /// The row of a thread's row-vector value `t`.
  Value rowOfSlot(int64_t t) {
    int64_t offset = (t / 2) * kFragmentRows + (t % 2) * 8;
    return offset ? arith::AddIOp::create(b, loc, rowLo, index(offset)) : rowLo;
  }
  /// The column-vector value of fragment slot `i` of a tile of `cols`
  /// columns: its column's (two of each 8 columns per thread).
  int64_t colSlot(int64_t i, int64_t cols) {
    int64_t j = i % plan.slots(kFragmentRows, cols);
    return 2 * (j / 4) + j % 2;
  }
  /// The column of a thread's column-vector value `c`.
  Value colOfSlot(int64_t c) {
    return arith::AddIOp::create(b, loc, pairCol, index(8 * (c / 2) + c % 2));
  }
  /// A vector's values at the thread's rows (`kind` RowVector) or columns
  /// (ColVector): a row or column vector's own, an on-demand vector's or a
  /// 0-d value's computed there.
  llvm::SmallVector<Value> vectorValues(Value vector, Placement kind);
  llvm::SmallVector<Value> rowValues(Value vector) {
    return vectorValues(vector, Placement::RowVector);
  }
  llvm::SmallVector<Value> colValues(Value vector) {
    return vectorValues(vector, Placement::ColVector);
  }
  /// A row or column vector's value at fragment slot `i` of a tile of
  /// `cols` columns (its slot's row's or column's), null for other tiles.
  Value vectorAtSlot(Value vector, int64_t i, int64_t cols) {
    if (plan.of(vector) == Placement::RowVector)
      return rowVectors[vector][rowSlot(i, cols)];
    if (plan.of(vector) == Placement::ColVector)
      return colVectors[vector][colSlot(i, cols)];
    return nullptr;
  }
  /// The row and column vectors `op` reads in the other orientation than
  /// `wanted` says of each, converted (through its conversionScratch).
  llvm::DenseMap<Value, llvm::SmallVector<Value>>
  convertVectors(linalg::GenericOp op,
                 llvm::function_ref<Placement(OpOperand &)> wanted);
  /// Whether this thread is one that, together, hold every value of a
  /// vector of `kind` once: a row's first thread of warpgroup 0 (a row
  /// vector), the first four threads (a column vector).
  Value holdsVector(Placement kind);
  /// A row vector's values at the thread's columns, or a column vector's
  /// at its rows, through `scratch` (a vector's words in shared memory).
  llvm::SmallVector<Value> convertVector(Value vector, Placement to,
                                         Value scratch);
  /// Stores a row or column vector's leading values (`prefix`, a slice of
  /// it), or the whole vector (`prefix` itself), into `buffer` at `indices`
  /// of each position.
  void
  emitVectorPrefix(Value prefix, Value buffer,
                   llvm::function_ref<llvm::SmallVector<Value>(Value)> indices);
  /// Stores a column vector into one row of a shared output.
  void emitVectorRow(tensor::InsertSliceOp op);
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
  /// Issues the global loads evalRow8(tile, row, col0) reads (16-byte rows
  /// of tokens or of saved states), kept in rowLoads for it.
  void prefetchRow8(Value tile, Value row, Value col0);
  /// The 16-byte row load of `at` (a slice of a global tensor, or token
  /// rows inserted into a tile) at (row, col0): issued by prefetchRow8, or
  /// now by `load`.
  llvm::SmallVector<Value>
  rowLoad(Operation *at, Value row, Value col0,
          llvm::function_ref<llvm::SmallVector<Value>()> load);
  /// The token rows `insert` puts into a tile, 8 from (row, col0): one
  /// 16-byte load of the row (a row before the chunk start when past its
  /// end, to be selected away), and whether the row is inside the chunk.
  std::pair<llvm::SmallVector<Value>, Value>
  tokenRow8(tensor::InsertSliceOp insert, Value row, Value col0);
  /// Eight consecutive elements of global `buffer` from `indices`: one
  /// 16-byte load where the buffer starts on a 16-byte boundary, else eight.
  llvm::SmallVector<Value> loadRow8(Value buffer,
                                    llvm::ArrayRef<Value> indices);
  /// The same as `count` (8 or 4) loads (zeros where `inside`, if given, is
  /// false).
  llvm::SmallVector<Value> loadElements8(Value buffer,
                                         llvm::ArrayRef<Value> indices,
                                         Value inside, int64_t count = 8);
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
  /// Whether cloneBody gives its clones approximate exponentials and
  /// contracted multiply-adds (inside reductions computed by each thread
  /// of a pass parallel over chunks).
  bool approximateMath = false;
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

  /// Element (row, col) of exact copy `staged` (made before the op
  /// reading it: prepareExactReads).
  Value exactAt(unsigned staged, Value row, Value col);
  /// Elements (row, col0 .. col0 + 7) of a tile: a fragment's from its
  /// exact copy (two vector loads), an on-demand tile's by evalRow8.
  llvm::SmallVector<Value> readRow8(Value tile, Value row, Value col0);
  /// Makes the exact copies that emitting `op` or evaluating `tiles` reads
  /// (a fragment's row as a vector, a fragment read away from its own
  /// positions), with the barrier before they are read: outside the loops
  /// and branches the reads are emitted in.
  void prepareExactReads(Operation *op, llvm::ArrayRef<Value> tiles = {});
  /// `map`'s results at the loop position `ivs`.
  llvm::SmallVector<Value> applyMap(AffineMap map, llvm::ArrayRef<Value> ivs);
  void emitThreadReduction(linalg::GenericOp op);
  /// A reduction of rows into a row vector or of columns into a column
  /// vector (Placer::placeVectorReduction).
  void emitVectorReduction(linalg::GenericOp op);
  /// An elementwise op of vectors, one of them a row or column vector.
  void emitVectorOp(linalg::GenericOp op);
  /// Makes the shared-memory copies that `loop`'s contractions read of
  /// tiles computed before it, once, before it.
  void stageLoopInvariants(scf::ForOp loop);
  /// Reads the on-demand vectors made before `loop` that its ops read
  /// along fragments' rows or columns only (LinSimp's a of the chunk, read
  /// from global memory), of up to 16 values a thread, into registers,
  /// once, before it: they are row or column vectors in it. Returns them,
  /// to be on-demand again after it.
  llvm::SmallVector<Value> readInvariantVectors(scf::ForOp loop);

  void emitBlock(Block &block);
  void emitOp(Operation *op);
  void emitElementwise(linalg::GenericOp op);
  void emitContraction(linalg::GenericOp op);
  void emitRows(tensor::InsertSliceOp op);
  void emitRows(tensor::ParallelInsertSliceOp op);
  /// An on-demand vector into a later kernel's stack, an element a thread.
  void emitVectorStore(tensor::ParallelInsertSliceOp op);
  /// Stores rows [0, length) of `tile` at `indices(row, col)` of `buffer`.
  void emitTileRows(
      Value tile, Value length, Value buffer,
      llvm::function_ref<llvm::SmallVector<Value>(Value, Value)> indices);
  void emitLoop(scf::ForOp loop);
  /// Whether `loop`'s body writes no shared memory, so that every iteration
  /// finds there what the loop found: no landing buffers, nested loops or
  /// branches, reduction or conversion scratch, no copy of a tile made in
  /// it, and no copy read in it but its contractions' operands
  /// (stageLoopInvariants copies those before it). LinSimp's anchor window,
  /// its products' A from registers.
  bool readsSharedMemoryOnly(scf::ForOp loop);
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
  std::optional<unsigned> landingOf(Operation *insert) {
    for (auto [i, l] : llvm::enumerate(plan.landing))
      if (l.tokens == insert)
        return i;
    return std::nullopt;
  }
  /// The landing buffer pair holding `insert`'s rows where they are read
  /// now (inside its chunk loop, copied ahead), if any.
  std::optional<unsigned> landedIn(Operation *insert) {
    std::optional<unsigned> l = landingOf(insert);
    if (l && landingCurrent.count(*l))
      return l;
    return std::nullopt;
  }
  /// `v` (a scalar of `loop`'s body) recomputed with the induction variable
  /// mapped as in `mapping`.
  Value cloneAt(Value v, Block *body, IRMapping &mapping);
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
                                 landingOffset(l, row, col));
  }
  /// Element (row, col) within one buffer of landing pair `l`: grouped as
  /// a Staged copy (bf16), or row-major, rows exactStride(cols) apart (f32).
  Value landingOffset(unsigned l, Value row, Value col) {
    const TilePlan::Landing &landing = plan.landing[l];
    if (!landing.f32)
      return groupedIndex(landing.rows, row, col);
    return rowMajorIndex(landing.cols, row, col);
  }
  /// Element (row, col) of a row-major f32 copy of a tile of `cols`
  /// columns (an exact copy, an f32 landing buffer).
  Value rowMajorIndex(int64_t cols, Value row, Value col) {
    return arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, row,
                              index(TilePlan::Staged::exactStride(cols))),
        col);
  }
  /// Eight f32 values from `view` at `at`, `at` + 1, ... (two 16-byte
  /// words; `at` a multiple of 4).
  llvm::SmallVector<Value> loadQuads(Value view, Value at);
  /// Eight consecutive values of row `row` from landing pair `l`'s current
  /// buffer, from column `col0` (a multiple of 8).
  llvm::SmallVector<Value> landedRow8(unsigned l, Value row, Value col0);
  /// The block over `tile`'s rows, 8 columns at a time (consecutive
  /// threads on consecutive rows), each thread kRowGroupsInFlight groups at
  /// a time: the global loads of all of them are issued (prefetchRow8)
  /// before `use` reads any, so that their latencies overlap. `use` gets
  /// the row, the first column and, where the groups do not divide evenly
  /// among the threads, whether the group is real (the others repeat the
  /// last group: loaded, not to be written); leaves the builder where it
  /// was.
  void forRowGroups(Value tile,
                    llvm::function_ref<void(Value, Value, Value)> use);
  /// Starts copying the token rows of landing pair `l` for the chunk whose
  /// induction variable is `iv` into its buffer at element `base`.
  void issueLanding(unsigned l, Block *body, IRMapping &mapping, Value base);

  /// Makes the shared-memory copies `needed` (and those of later
  /// contractions of `op`'s block that are ready).
  void stage(Operation *op, llvm::ArrayRef<unsigned> needed);
  void materialize(unsigned staged);
  /// `v` as bf16 (rounded to nearest).
  Value toBF16(Value v);
  /// Two fragment elements as one b32 register of a bf16 pair, `lo` in the
  /// low half: a register of wgmma's A, of stmatrix's source.
  Value packBF16(Value lo, Value hi);
  /// Copy `staged` is written now (copies in its bytes are gone).
  void markWritten(unsigned staged);
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
  /// Row vectors' values (rowSlot order), column vectors' (colSlot order).
  llvm::DenseMap<Value, llvm::SmallVector<Value>> rowVectors, colVectors;
  Value window;
  llvm::DenseSet<unsigned> materialized, readSince, writtenSince;
  bool unknownState = false;
  /// Barriers and copies written so far (a body that reads shared memory
  /// only emits none).
  int64_t barriers = 0, copiesWritten = 0;
  /// Set where emission went wrong (an error was emitted).
  bool broken = false;
  Value windowAddress, threadId, lane, warpInGroup, warpgroup, rowLo, pairCol;
  llvm::DenseMap<Value, Value> alignment; // global buffer -> i1
  /// Row loads prefetchRow8 issued, by (slice or insert, row, col0); valid
  /// in the forRowGroups step that issued them.
  llvm::DenseMap<std::tuple<Operation *, Value, Value>,
                 llvm::SmallVector<Value>>
      rowLoads;
  Block *kernelEntry = nullptr;
};

} // namespace mlir::hla::gpumap

#endif // HLA_LIB_DIALECT_HLA_GPU_TILEEMITTER_H
