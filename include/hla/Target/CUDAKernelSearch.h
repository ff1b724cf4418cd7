//===- CUDAKernelSearch.h - Kernels of the options that fit -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_TARGET_CUDAKERNELSEARCH_H
#define HLA_TARGET_CUDAKERNELSEARCH_H

#include "hla/Pipelines/Pipelines.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Support/Timing.h"

#include <memory>
#include <string>

namespace mlir::hla {

/// How the search treats its result, besides the pipeline options.
struct CUDAKernelSearchSettings {
  /// Assemble the kernels with ptxas (its verdict on spills and serialized
  /// wgmma steers the search); off, the module keeps the PTX of the first
  /// choice (what `--emit=ptx` writes).
  bool assemble = true;
  /// Where ptxas's -v log goes ("" = nowhere).
  std::string ptxasLog;
  /// Keep kernels ptxas spills registers in, as the options make them
  /// (otherwise the search changes what was left to it, and options the
  /// caller fixed fail).
  bool allowSpills = false;
  /// When set, the search's trials and ptxas are timed under it.
  TimingScope *timing = nullptr;
};

/// The hla-cuda-kernels pass: builds the module's CUDA kernels (the device
/// half of hla-cuda-pipeline) with `requested`, choosing what is left to
/// it — a chunk size of 0, value-tile -1, warpgroups 0 and every `auto` —
/// by trial: register tiles first, the segmented schedule where the
/// (sequence, head) pairs leave SMs idle, mma.sync where wgmma's staging
/// pushes kernels into device-memory scratch, narrower tiles, two
/// warpgroups or the threads' copies where ptxas reports spills. The kernel
/// modules end as cubins (PTX unless `settings.assemble`); the options
/// decided are recorded on the module as `hla.cuda_options`, which
/// `hla-cuda-pipeline` takes to rebuild the same kernels.
std::unique_ptr<Pass>
createCUDAKernelSearchPass(const CUDAPipelineOptions &requested,
                           CUDAKernelSearchSettings settings = {});

/// Registers hla-cuda-kernels (its options are hla-cuda-pipeline's).
void registerCUDAKernelSearch();

} // namespace mlir::hla

#endif // HLA_TARGET_CUDAKERNELSEARCH_H
