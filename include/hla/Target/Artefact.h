//===- Artefact.h - Compile a model graph to an artefact --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_TARGET_ARTEFACT_H
#define HLA_TARGET_ARTEFACT_H

#include "hla/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

#include <string>
#include <vector>

namespace mlir::hla {

/// What `hla-opt --hla-target=... --emit=...` produces.
struct ArtefactOptions {
  /// "cpu" or "cuda".
  std::string target = "cpu";
  /// "llvm" (LLVM IR text of the host code), "obj", "shared" or "exe"; for
  /// cuda also "ptx" and "cubin" (the kernels of a one-kernel graph).
  std::string emit = "exe";
  std::string outputPath;
  /// The function an executable runs.
  std::string entry = "main";
  /// Tokens per chunk; 0: the target's default (64 on CPUs, 32 on CUDA,
  /// where it was fastest at every benchmark shape on an H200).
  int64_t chunkSize = 0;
  /// hla-chunk's form on the CPU. Segmented (the fused form wherever the
  /// (sequence, head) pairs fill the threads) is 1.5-10x faster on this
  /// machine's CPU (bench/RESULTS-CPU.md); phased is the default.
  ChunkForm chunkForm = ChunkForm::Phased;
  /// CPU: the scan over chunk summaries.
  ScanSchedule scanSchedule = ScanSchedule::Auto;
  /// CUDA: the kernels' decomposition (auto: the search's choice).
  KernelSchedule cudaSchedule = KernelSchedule::Auto;
  /// Runs of chunks per sequence of the segmented form/schedule (0: chosen
  /// for the target's parallelism).
  int64_t segments = 0;
  /// Value columns per (sequence, head) iteration of the fused form (0:
  /// all; -1: chosen from the target's parallelism; hla-chunk's
  /// value-tile).
  int64_t valueTile = -1;
  /// LinSimp: the stabilised anchor features (off only to compare).
  bool stableFeatures = true;
  /// LinSimp: readout rows of one pass over the anchor window (hla-chunk's
  /// anchor-rows); 0: the target's (CPU 64; CUDA 64, halved while the
  /// kernels need device-memory scratch).
  int64_t anchorRows = 0;
  /// Outputs before a non-finite token stay finite (hla-chunk).
  bool causalIsolation = true;
  /// Compile the backward of the entry function instead (hla-derive-vjp):
  /// f(inputs..., d_output) -> the inputs' gradients.
  bool vjp = false;
  /// Also compile the entry function's summary and combine
  /// (hla-add-summary-entries): `<entry>_summary`, `<entry>_combine`.
  bool summaryEntries = false;
  /// CPU: the threads the auto scan schedule and segmented form plan for.
  int64_t scanThreads = 2;
  bool vectorize = true;
  /// CUDA: GPU architecture, PTX features, toolkit root ("" = the default).
  std::string cudaChip = "sm_90a";
  std::string cudaFeatures = "+ptx80";
  /// CUDA: tensor-core instruction of chunk contractions (auto: wgmma on
  /// sm_90a, mma.sync elsewhere).
  MmaInstruction cudaMma = MmaInstruction::Auto;
  /// CUDA: which generator maps the chunk loops (auto: register tiles where
  /// they apply, tried first at 64-token chunks when no chunk size is given;
  /// tiles: register tiles or an error; phases: the shared-memory phases).
  ChunkLoopGenerator cudaGenerator = ChunkLoopGenerator::Auto;
  /// The derived backward: the tokens' gradients in a pass of their own,
  /// parallel over chunks (auto: on CUDA register tiles; off on the CPU).
  AutoSwitch parallelGradients = AutoSwitch::Auto;
  /// Fused chunk loops: the work the state does not reach in a pass
  /// parallel over chunks (auto: on CUDA register tiles; off on the CPU).
  AutoSwitch hoistChunkWork = AutoSwitch::Auto;
  /// With parallel gradients: a pass per input's gradient.
  bool splitGradients = false;
  /// 16-bit ops' products whose results cancel (LinSimp's backward) split
  /// into products of bf16-exact parts (auto: where CUDA's tensor cores
  /// round operands to bf16; off on the CPU).
  AutoSwitch bf16Products = AutoSwitch::Auto;
  /// Passes parallel over chunks cut into stages holding at most this many
  /// bytes of tiles at once (hla-fission-chunk-passes; 0: uncut).
  int64_t fissionLiveBytes = 0;
  /// CUDA register tiles: warpgroups per block, each holding its share of
  /// every fragment's columns (0: auto, two where one would hold more than
  /// 128 fragment registers per thread).
  int64_t cudaWarpgroups = 0;
  /// CUDA: keep kernels that spill registers as the options make them.
  bool cudaAllowSpills = false;
  /// CUDA: threads per thread block of the chunk loops' kernels.
  int64_t cudaThreads = 256;
  std::string cudaToolkit;
  /// Where the artefact runtimes (libhla_*_runtime*.a) are; "" =
  /// $HLA_RUNTIME_DIR, else beside the binary holding this code or in its
  /// ../lib (right for hla-opt and libHLACAPI.so; an embedder linking hla
  /// statically passes the install's, HLA_RUNTIME_LIBRARY_DIR in CMake).
  std::string runtimeDirectory;
  /// CUDA: report the options the schedule search settled on (also kept as
  /// the module's `hla.cuda_options`) as a remark.
  bool reportCUDAOptions = false;
  /// Where ptxas's -v log of the kernels goes ("" = nowhere).
  std::string ptxasLog;
  /// When set, every phase (the pipelines' passes, ptxas, LLVM's -O3 and
  /// code generation, the link) is timed under this scope.
  TimingScope *timing = nullptr;
  /// Apply the pass-manager command-line options (--mlir-print-ir-*,
  /// --mlir-pass-statistics, ...) to the pipelines: for hla-opt, which
  /// registers them.
  bool passManagerCLOptions = false;
};

/// One option of an artefact compile as hla-opt lists it: the flag's name
/// (also the key of the C API's options string), its help and the default.
struct ArtefactKnob {
  std::string name, help, defaultValue;
};

/// Every option an artefact compile takes (ArtefactOptions.cpp is their
/// one home): hla-opt's flags, the C API's and Python's keys.
std::vector<ArtefactKnob> getArtefactKnobs();

/// Sets option `key` from its textual `value`, validated; on failure,
/// `error` names the key and what it needs.
LogicalResult setArtefactOption(llvm::StringRef key, llvm::StringRef value,
                                ArtefactOptions &options, std::string &error);

/// Sets the options of "key=value key=value ..." (setArtefactOption each).
LogicalResult parseArtefactOptions(llvm::StringRef text,
                                   ArtefactOptions &options,
                                   std::string &error);

/// Runs the target's pipeline on `module` and writes the artefact. Reports
/// problems as diagnostics on the module (or its ops) and returns failure.
LogicalResult compileToArtefact(ModuleOp module,
                                const ArtefactOptions &options);

} // namespace mlir::hla

#endif // HLA_TARGET_ARTEFACT_H
