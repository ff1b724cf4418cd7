//===- RegisterTiles.h - Chunk tiles as register values ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-lower-register-tiles runs a tensor chunk loop as one warpgroup per
// (sequence, head) with its tiles as values, in these files:
//
//   PrepareTiles.cpp        the loop's copy rewritten into forms they
//                           place (PrepareTiles.h);
//   PlaceTiles.cpp          where each tile lives (TilePlan), or why the
//                           loop cannot be placed;
//   OrderTiles.cpp          the chunk body's order, for register pressure;
//   LowerRegisterTiles.cpp  the gpu.launch that runs a plan, and the pass;
//   TileMemory.cpp          its tiles in memory (TileEmitter.h: the
//                           emitter both share).
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_GPU_REGISTERTILES_H
#define HLA_LIB_DIALECT_HLA_GPU_REGISTERTILES_H

#include "hla/Dialect/HLA/GPU/PrepareTiles.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::hla::gpumap {

/// Where a value of the chunk loop lives.
enum class Placement {
  /// Not a tensor: scalar code, run by every thread.
  Scalar,
  /// A tensor.empty: an output operand whose contents are never read.
  Empty,
  /// A tile whose elements any thread computes where it needs them: token
  /// tiles read from global memory, fills, elementwise ops of those.
  Expr,
  /// A fragment in registers: each 64 rows of it a wgmma accumulator (up to
  /// kMaxFragmentRows rows: a state of d = 128 rows is two).
  Frag,
  /// A tensor argument of the function (global memory).
  Global,
  /// A slice of a Global tensor (a chunk's token rows).
  GlobalSlice,
  /// (A slice of) a loop output in global memory, written row by row.
  Rows,
  /// The leading rows of a tile, about to be written into Rows.
  Prefix,
  /// A 0-d tensor every thread knows the value of: a scalar
  /// (tensor.from_elements, a fill), or a reduction of whole tiles by the
  /// block.
  ScalarTensor,
  /// A vector indexed by fragment rows (a row's maximum or sum; 64 to 256
  /// of them), in registers: each thread holds the values of the rows its
  /// fragment slots are in, two per 64-row block (rowSlot).
  RowVector,
  /// A vector indexed by fragment columns (a column's sum: LinSimp's a),
  /// in registers: each thread holds the values of the columns its slots
  /// are in, a quarter of them (colSlot).
  ColVector,
};

/// The threads of one block: one warpgroup.
constexpr int64_t kTileThreads = 128;
/// The rows of a fragment's row block: wgmma's M.
constexpr int64_t kFragmentRows = 64;
/// The most rows of a fragment (row blocks of kFragmentRows).
constexpr int64_t kMaxFragmentRows = 256;
/// Values a thread holds of a row vector of `rows` rows: two rows of each
/// row block (wgmma's accumulator rows of a thread are r and r + 8).
inline int64_t rowVectorSlots(int64_t rows) { return 2 * rows / kFragmentRows; }
/// Values a thread of one warpgroup holds of a column vector of `cols`
/// columns: two of each 8 (wgmma's accumulator columns of a thread are
/// 2 (lane % 4) and the next, in each group of 8).
inline int64_t colVectorSlots(int64_t cols) { return cols / 4; }
/// 16-byte row groups of a tile a thread loads from global memory before
/// it uses any (their latencies overlap; each holds up to 8 registers).
constexpr int64_t kRowGroupsInFlight = 4;

/// Bytes from one group of 8 columns of a shared-memory tile of `rows` rows
/// to the next: the rows' 16 bytes each and 16 more, so that threads
/// copying consecutive groups of one token row (coalesced in global
/// memory) write different banks.
inline int64_t groupBytes(int64_t rows) { return rows * 16 + 16; }

/// Where every tile of one (sequence, head) loop lives.
struct TilePlan {
  scf::ForallOp forall;
  llvm::DenseMap<Value, Placement> placement;
  /// The slice of a shared output a Rows value stands for.
  llvm::DenseMap<Value, tensor::ExtractSliceOp> rowsSlice;
  /// A bf16 copy of a tile in shared memory, laid out as wgmma reads an
  /// operand without swizzling: 8 x 8 core matrices (16-byte rows), the
  /// tile's rows down each group of 8 columns, the groups columnGroupBytes
  /// apart. A contraction whose K is the tile's columns reads it K-major,
  /// one whose K is its rows MN-major (wgmma's transpose bit): one copy
  /// serves both orientations.
  ///
  /// An exact copy is a fragment's f32 values instead, row-major (rows
  /// exactStride(cols) elements apart), for reads at any position by any
  /// thread: a row of it as a vector (KDA's reference rows of Γ), its
  /// elements at positions that are not the reader's own (a reduction
  /// computed by each thread for its elements, an elementwise op reading it
  /// through a map other than its output's).
  struct Staged {
    Value tile;
    int64_t rows, cols, offset;
    /// The landing buffers already holding the tile (token rows as
    /// copied): no copy is made.
    std::optional<unsigned> landing;
    bool exact = false;
    int64_t columnGroupBytes() const { return groupBytes(rows); }
    int64_t bytes() const {
      if (exact)
        return rows * exactStride(cols) * 4;
      return landing ? 0 : cols / 8 * columnGroupBytes();
    }
    /// 16-byte rows, four banks apart from one row to the next.
    static int64_t exactStride(int64_t cols) { return cols + 4; }
  };
  llvm::SmallVector<Staged> staged;
  /// Token rows read inside a chunk loop, copied a chunk ahead (cp.async)
  /// into two `rows` x `cols` bf16 buffers at `offset`, each laid out as a
  /// Staged copy: the insertion of the rows into a zero tile, or a whole
  /// bf16 tile of an earlier kernel's stack (tensor.extract_slice). A
  /// whole f32 tile of a stack (`f32`) lands row-major instead, rows
  /// Staged::exactStride(cols) elements apart, for elementwise reads. Rows
  /// a pass with no chunk loop reads land once, before its work, into one
  /// buffer.
  struct Landing {
    Operation *tokens;
    int64_t rows, cols, offset;
    bool f32 = false;
    int64_t buffers = 2;
    int64_t bufferBytes() const {
      return f32 ? rows * Staged::exactStride(cols) * 4
                 : cols / 8 * groupBytes(rows);
    }
    int64_t bytes() const { return buffers * bufferBytes(); }
    int64_t elementBytes() const { return f32 ? 4 : 2; }
  };
  llvm::SmallVector<Landing> landing;
  /// Shared-memory bytes of each reduction that needs some: a whole-tile
  /// reduction's words (one per warp), a column reduction's partial sums
  /// (one per warp and column).
  /// (In placement order: the shared-memory layout must not depend on
  /// pointer values.)
  llvm::MapVector<Operation *, int64_t> reductionScratch;
  /// The scratch of each vector op or reduction into a vector that reads
  /// row and column vectors both (KDA's backward adds a row sum of its
  /// state's cotangent to column sums of token tiles): the vectors of the
  /// other orientation go through shared memory, kMaxFragmentRows words
  /// each.
  struct Conversions {
    int64_t offset, vectors;
    int64_t bytes() const { return vectors * kMaxFragmentRows * 4; }
  };
  llvm::MapVector<Operation *, Conversions> conversionScratch;
  int64_t sharedBytes = 0;
  int64_t contractions = 0;
  /// Reductions computed by each thread for its own elements.
  int64_t threadReductions = 0;
  /// Reductions of tiles' rows into row vectors, of their columns into
  /// column vectors.
  int64_t rowReductions = 0, colReductions = 0;
  /// Bytes of the scratch of reduction `op` (reductionScratch).
  static int64_t scratchBytes(Operation *op);
  /// The most fragment registers per thread of one warpgroup alive at once
  /// in a chunk loop's body, in the order orderForRegisterPressure chose.
  int64_t peakFragmentRegisters = 0;
  /// Warpgroups per block; each holds all rows by cols / warpgroups columns
  /// of every fragment (its own wgmma of that width).
  int64_t warpgroups = 1;
  /// Contractions whose A operand is a fragment read from its registers,
  /// with no copy in shared memory: the accumulator layout of a fragment's
  /// 16 columns [k0, k0 + 16), packed to bf16 pairs, is wgmma's register A
  /// of that K slice (readOperandsFromRegisters).
  llvm::DenseSet<Operation *> registerA;

  int64_t threads() const { return kTileThreads * warpgroups; }
  /// Elements per thread of a fragment of `rows` x `cols`.
  int64_t slots(int64_t rows, int64_t cols) const {
    return rows * cols / threads();
  }

  std::optional<unsigned> stagedIndex(Value tile, bool exact = false) const {
    for (auto [i, s] : llvm::enumerate(staged))
      if (s.tile == tile && s.exact == exact)
        return i;
    return std::nullopt;
  }
  Placement of(Value v) const {
    auto it = placement.find(v);
    return it == placement.end() ? Placement::Scalar : it->second;
  }
  /// Shared-memory operand copies made from fragments: the layout
  /// conversions.
  int64_t conversions() const;
  /// Operands copied into shared memory (not read from landing buffers).
  int64_t copies() const;
  int64_t exactCopies() const {
    return llvm::count_if(staged, [](const Staged &s) { return s.exact; });
  }
  /// One line: the placements, contractions and conversions.
  std::string summary() const;
};

/// Whether a whole-tile reduction is a sum: `out + f(inputs)`, f not
/// reading `out`, so that partial sums can be added in any order.
bool isSum(linalg::GenericOp op);

/// Whether `v` is a function's 2-D static argument widened elementwise
/// (extf) outside every loop (LinSimp's Ω as f32): an on-demand tile of
/// the argument.
bool isWidenedArgument(Value v);

/// Rewrites elementwise reads of a contraction's result in the other
/// orientation (hla2's masked (QKᵀ)ᵀ) into reads of the same product
/// computed with its output transposed: a fragment's transpose is a round
/// trip through shared memory and a barrier, the product again a few more
/// wgmma on operands already staged. Elementwise ops between the product
/// and the transposed read are computed again transposed too.
void transposeProductReads(scf::ForallOp forall);

/// The tiles copied into shared memory beyond a chunk loop's token rows and
/// bf16 stack tiles (those are always).
struct ExtraLandings {
  /// A pass with no chunk loop (no loop of it reads tokens: LinSimp's
  /// anchor window reads tiles made before it) copies its token rows
  /// before its work (else
  /// they are read from global memory where they are needed).
  bool upFront = true;
  /// A chunk loop's whole f32 tiles of earlier kernels' stacks, a chunk
  /// ahead (else read from global memory where they are needed).
  bool f32Stacks = false;
  /// A pass with no loop: the bytes its whole f32 tiles of earlier
  /// kernels' stacks may take copied before its work, those read most
  /// first (stackReads; 0: all read from global memory where needed).
  int64_t passStackBytes = 0;
};

/// Places every tile of `forall`'s body; on failure `why` says what could
/// not be placed.
std::optional<TilePlan> planRegisterTiles(scf::ForallOp forall,
                                          std::string &why,
                                          ExtraLandings extra = {});

/// Moves the side-effect free ops whose results only one region of an
/// scf.if reads into that region (upstream's control-flow sinking).
void sinkIntoBranches(scf::ForallOp forall);

/// Reorders each chunk loop's body (side-effect free tensor ops), or the
/// body of a loop without one (a pass parallel over chunks), so that fewer
/// fragments are alive at once: greedily, the ready op adding the fewest
/// fragment registers first.
void orderForRegisterPressure(TilePlan &plan);

/// Lays out the block's shared memory: landing buffers and reduction
/// scratch, then the operand copies, those alive at different times (in
/// the body's order) at the same bytes. Sets the offsets and
/// `plan.sharedBytes`.
void shareSharedMemory(TilePlan &plan);

/// A contraction's A operand: the input indexed by C's rows.
OpOperand *contractionOperandA(linalg::GenericOp op);

/// Reads the A operand of each contraction that is a fragment indexed (M,
/// K) from its registers (TilePlan::registerA), where the block will be one
/// warpgroup (`requestedWarpgroups` as chooseWarpgroups takes it; with two,
/// each would hold half of A's columns), and drops the copies no
/// contraction reads any more, closing the gaps they leave in shared
/// memory.
void readOperandsFromRegisters(TilePlan &plan, int64_t requestedWarpgroups);

/// Sets `plan.warpgroups`: `requested` (1 or 2), or for 0 two warpgroups
/// where one would hold more than 128 fragment registers per thread (ptxas
/// has 255 for everything). Fails, saying why, where a fragment's columns
/// cannot be shared (fewer than 8 per warpgroup).
LogicalResult chooseWarpgroups(TilePlan &plan, int64_t requested,
                               std::string &why);

/// Replaces `plan.forall` by a gpu.launch running it.
LogicalResult lowerRegisterTiles(TilePlan &plan);

} // namespace mlir::hla::gpumap

#endif // HLA_LIB_DIALECT_HLA_GPU_REGISTERTILES_H
