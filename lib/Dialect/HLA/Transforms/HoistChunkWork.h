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

#include <cstdint>
#include <optional>

namespace mlir::hla {

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
