//===- HoistChunkWork.h - hla-hoist-chunk-work's two splits -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-hoist-chunk-work moves a fused chunk loop's work that can run with
// every chunk in parallel out of the loop: the work the state does not
// reach, ahead of the loop (HoistChunkWork.cpp), or the output rows, after
// it (HoistChunkReadout.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_TRANSFORMS_HOISTCHUNKWORK_H
#define HLA_LIB_DIALECT_HLA_TRANSFORMS_HOISTCHUNKWORK_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::hla {

/// The values `op` reads, its nested regions' included (those defined
/// outside it).
llvm::SmallVector<Value> valuesRead(Operation *op);

/// The foralls under `root` that no forall holds (the passes over
/// sequences, heads and chunks), in order.
llvm::SmallVector<scf::ForallOp> outermostForalls(Operation *root);

/// Whether `op` reduces (a contraction, a pair sum): the work worth moving
/// out of a loop.
bool isReduction(Operation *op);

/// `tile` with each element widened or narrowed to the float type
/// `element` (a stack's bf16 and back), itself where it has that type.
Value convertElements(OpBuilder &b, Location loc, Value tile, Type element);

/// The static extents of `forall` (its bounds start at 0, step 1).
llvm::SmallVector<int64_t> forallExtents(scf::ForallOp forall);

/// A stack of per-chunk values (both splits): chunk c's 2-D tile of R rows
/// at rows [c R, (c + 1) R) of [forall extents..., chunks R, cols], its
/// vector at row c of [..., chunks, n].
llvm::SmallVector<int64_t> stackShape(llvm::ArrayRef<int64_t> extents,
                                      RankedTensorType type, int64_t chunks);

/// Offsets, sizes and strides of rows of a stack.
struct StackRows {
  llvm::SmallVector<OpFoldResult> offsets, sizes, strides;
};

/// One (sequence, head)'s rows `first` .. `first + rows` (of `cols`
/// columns) of a stack, for the forall's indices `outer`.
StackRows stackRows(OpBuilder &b, ValueRange outer, OpFoldResult first,
                    int64_t rows, int64_t cols);

/// Where chunk `chunk`'s value of `type` is in its stack.
StackRows chunkRows(OpBuilder &b, Location loc, ValueRange outer, Value chunk,
                    RankedTensorType type);

/// A forall over `forall`'s indices and `loop`'s `chunks` chunks with
/// `outputs`, mapping `forall`'s indices and `loop`'s induction variable
/// to its own in `mapping`.
scf::ForallOp createChunkForall(OpBuilder &b, Location loc,
                                scf::ForallOp forall, scf::ForOp loop,
                                int64_t chunks, ValueRange outputs,
                                IRMapping &mapping);

/// What hoistChunkReadout moved.
struct ReadoutReport {
  /// Reductions run per chunk by the readout alone, and by the state.
  int64_t readoutReductions, stateReductions;
  /// Carried values stacked for the parallel pass.
  int64_t stacked;
};

/// Splits `forall`'s chunk loop `loop` (lower bound 0, step 1, static
/// bounds) when its output rows run at least 2 `minProducts` reductions per
/// chunk (nested loops' bodies once per iteration, a branch's cheaper
/// side) and four times as many as its state: the loop keeps the state and
/// stacks the state entering each chunk; a new forall over the forall's indices
/// and the chunks computes the rows. Returns nullopt, changing nothing,
/// otherwise.
std::optional<ReadoutReport>
hoistChunkReadout(scf::ForallOp forall, scf::ForOp loop, int64_t minProducts);

} // namespace mlir::hla

#endif // HLA_LIB_DIALECT_HLA_TRANSFORMS_HOISTCHUNKWORK_H
