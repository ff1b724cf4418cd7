//===- Pipelines.h - hla's code-generation pipelines ------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_PIPELINES_PIPELINES_H
#define HLA_PIPELINES_PIPELINES_H

#include "hla/Dialect/HLA/Modes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::hla {

/// LinSimp's readout rows per pass over the anchor window by default (the
/// CPU's, and where the CUDA search starts: 64-row tiles are wgmma's M).
constexpr int64_t kDefaultAnchorRows = 64;

/// Options of hla-cpu-pipeline.
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  PassOptions::Option<int64_t> chunkSize{*this, "chunk-size",
                                         llvm::cl::desc("Tokens per chunk"),
                                         llvm::cl::init(64)};
  PassOptions::Option<ChunkForm> chunkForm{
      *this, "chunk-form",
      llvm::cl::desc("Chunked form: phased (parallel over chunks), fused "
                     "(one carried loop per sequence and head) or segmented "
                     "(fused loops over runs of chunks, combined; with "
                     "segments=0 the fused form wherever the (sequence, "
                     "head) pairs fill `scan-threads`)"),
      llvm::cl::init(ChunkForm::Phased), modeValues<ChunkForm>()};
  PassOptions::Option<int64_t> segments{
      *this, "segments",
      llvm::cl::desc("Segmented form: runs of chunks per sequence (0: enough "
                     "for `scan-threads`)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> valueTile{
      *this, "value-tile",
      llvm::cl::desc("Fused form: value columns per (sequence, head, tile) "
                     "iteration (0: all; -1: auto; see hla-chunk)"),
      llvm::cl::init(-1)};
  PassOptions::Option<ScanSchedule> scanSchedule{
      *this, "scan-schedule",
      llvm::cl::desc("Scan over chunks: sequential, blelloch or auto"),
      llvm::cl::init(ScanSchedule::Auto), modeValues<ScanSchedule>()};
  PassOptions::Option<bool> stableFeatures{
      *this, "linsimp-stable-features",
      llvm::cl::desc("LinSimp: shift anchor-feature exponents by each "
                     "query's running maximum"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> anchorRows{
      *this, "linsimp-anchor-rows",
      llvm::cl::desc("LinSimp: readout rows of one pass over the anchor "
                     "window (anchor offsets stacked; see hla-chunk)"),
      llvm::cl::init(kDefaultAnchorRows)};
  PassOptions::Option<bool> causalIsolation{
      *this, "causal-isolation",
      llvm::cl::desc("Keep outputs before a non-finite token finite (a "
                     "chunk holding one is read out again; see hla-chunk)"),
      llvm::cl::init(true)};
  PassOptions::Option<AutoSwitch> parallelGradients{
      *this, "parallel-gradients",
      llvm::cl::desc("The derived backward: the tokens' gradients in a pass "
                     "parallel over chunks (hla-chunk's parallel-gradients): "
                     "auto (off here), on or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<AutoSwitch> bf16Products{
      *this, "bf16-products",
      llvm::cl::desc("16-bit ops' products whose results cancel split into "
                     "products of bf16-exact parts (hla-chunk's "
                     "bf16-products): auto (off here: the CPU multiplies in "
                     "f32), on (to check the split) or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<int64_t> fissionLiveBytes{
      *this, "fission-live-bytes",
      llvm::cl::desc("Passes parallel over chunks cut into stages holding "
                     "at most this many bytes of tiles at once "
                     "(hla-fission-chunk-passes; 0: uncut)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> splitGradients{
      *this, "split-gradients",
      llvm::cl::desc("The derived backward with parallel gradients: a pass "
                     "per input's gradient (hla-chunk's split-gradients)"),
      llvm::cl::init(false)};
  PassOptions::Option<AutoSwitch> hoistChunkWork{
      *this, "hoist-chunk-work",
      llvm::cl::desc("Fused chunk loops: the work the carried state does "
                     "not reach in a pass parallel over chunks "
                     "(hla-hoist-chunk-work): auto (off here), on or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<int64_t> scanThreads{
      *this, "scan-threads",
      llvm::cl::desc("Threads the auto scan schedule and the segmented form "
                     "plan for"),
      llvm::cl::init(2)};
  PassOptions::Option<bool> parallel{
      *this, "parallel", llvm::cl::desc("Run parallel loops on OpenMP threads"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> vectorize{
      *this, "vectorize", llvm::cl::desc("Tile and vectorise the chunk math"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("Function exported as hla_entry (executables)"),
      llvm::cl::init("")};
};

/// Model graph (tensors, hla ops) to the LLVM dialect with the artefact C
/// ABI: hla-expand, hla-chunk, hla-lower-scans, convert-hla-to-linalg,
/// bufferization, loops (vectorised), OpenMP, LLVM.
void buildCPUPipeline(OpPassManager &pm, const CPUPipelineOptions &options);

/// Options of hla-cuda-pipeline.
struct CUDAPipelineOptions : public PassPipelineOptions<CUDAPipelineOptions> {
  PassOptions::Option<int64_t> chunkSize{
      *this, "chunk-size",
      llvm::cl::desc("Tokens per chunk (0: the target's, 32; "
                     "hla-cuda-kernels tries register tiles at 64 first)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> blockThreads{
      *this, "block-threads", llvm::cl::desc("Threads per thread block"),
      llvm::cl::init(256)};
  PassOptions::Option<KernelSchedule> schedule{
      *this, "schedule",
      llvm::cl::desc("persistent (one thread block per sequence and head "
                     "loops over all its chunks), segmented (the sequence "
                     "split into runs of chunks, their states combined) or "
                     "auto (segmented when there are fewer sequence-head "
                     "pairs than `parallelism`)"),
      llvm::cl::init(KernelSchedule::Auto), modeValues<KernelSchedule>()};
  PassOptions::Option<int64_t> segments{
      *this, "segments",
      llvm::cl::desc("Segmented schedule: runs of chunks per sequence (0: "
                     "enough thread blocks for `parallelism`)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> valueTile{
      *this, "value-tile",
      llvm::cl::desc("Fused form: value columns per (sequence, head, tile) "
                     "iteration (0: all; -1: auto; see hla-chunk)"),
      llvm::cl::init(-1)};
  PassOptions::Option<bool> causalIsolation{
      *this, "causal-isolation",
      llvm::cl::desc("Keep outputs before a non-finite token finite (a "
                     "chunk holding one is read out again; see hla-chunk)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> stableFeatures{
      *this, "linsimp-stable-features",
      llvm::cl::desc("LinSimp: shift anchor-feature exponents by each "
                     "query's running maximum"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> anchorRows{
      *this, "linsimp-anchor-rows",
      llvm::cl::desc("LinSimp: readout rows of one pass over the anchor "
                     "window (anchor offsets stacked; see hla-chunk); 0: "
                     "64, which hla-cuda-kernels halves while the kernels "
                     "need device-memory scratch"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> parallelism{
      *this, "parallelism",
      llvm::cl::desc("Thread blocks the schedule aims to run at once (the "
                     "SMs: 132 on an H200)"),
      llvm::cl::init(132)};
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("GPU architecture (sm_90a, sm_80, ...)"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (sm_90a needs +ptx80 or later)"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit root (libdevice, ptxas); empty: "
                     "$CUDA_HOME, else the toolkit hla was configured with"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> maxSharedMemory{
      *this, "max-shared-memory",
      llvm::cl::desc("Dynamic shared memory per thread block (bytes)"),
      llvm::cl::init(232448)};
  PassOptions::Option<AutoSwitch> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Chunk contractions on tensor cores (bf16 operands): "
                     "auto (for 16-bit float inputs), on or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<MmaInstruction> mma{
      *this, "mma",
      llvm::cl::desc("Tensor-core instruction of chunk contractions: auto "
                     "(wgmma on sm_90a, mma.sync elsewhere), wgmma or "
                     "mma.sync"),
      llvm::cl::init(MmaInstruction::Auto), modeValues<MmaInstruction>()};
  PassOptions::Option<ChunkLoopGenerator> generator{
      *this, "generator",
      llvm::cl::desc("Chunk-loop code generator: auto (register tiles, "
                     "hla-gpu-lower-register-tiles, for the loops it can "
                     "place; shared-memory phases for the others), tiles "
                     "(every chunk loop in registers, else an error) or "
                     "phases (hla-gpu-map-chunk-loops only)"),
      llvm::cl::init(ChunkLoopGenerator::Auto),
      modeValues<ChunkLoopGenerator>()};
  PassOptions::Option<AutoSwitch> parallelGradients{
      *this, "parallel-gradients",
      llvm::cl::desc("The derived backward: the tokens' gradients in a pass "
                     "parallel over chunks (hla-chunk's parallel-gradients): "
                     "auto (with register tiles), on or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<AutoSwitch> bf16Products{
      *this, "bf16-products",
      llvm::cl::desc("16-bit ops' products whose results cancel split into "
                     "products of bf16-exact parts (hla-chunk's "
                     "bf16-products): auto (where tensor cores run), on or "
                     "off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<AutoSwitch> hoistChunkWork{
      *this, "hoist-chunk-work",
      llvm::cl::desc("Persistent kernels: the chunk loop's work that the "
                     "carried state does not reach in a kernel parallel "
                     "over chunks (hla-hoist-chunk-work, bf16 operands): "
                     "auto (with register tiles), on or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<int64_t> fissionLiveBytes{
      *this, "fission-live-bytes",
      llvm::cl::desc("Passes parallel over chunks cut into stages holding "
                     "at most this many bytes of tiles at once "
                     "(hla-fission-chunk-passes; 0: uncut)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> splitGradients{
      *this, "split-gradients",
      llvm::cl::desc("The derived backward with parallel gradients: a pass "
                     "per input's gradient (hla-chunk's split-gradients)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> warpgroups{
      *this, "warpgroups",
      llvm::cl::desc("Register tiles: warpgroups per block (0: auto, two "
                     "where one would hold more than 128 fragment registers "
                     "per thread; 1; 2)"),
      llvm::cl::init(0)};
  PassOptions::Option<AutoSwitch> tma{
      *this, "tma",
      llvm::cl::desc("Token tiles loaded with TMA (cp.async.bulk.tensor): "
                     "auto (on sm_90a; hla-opt falls back to the threads' "
                     "copies where they make a kernel spill), on or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<AutoSwitch> tmaPrefetch{
      *this, "tma-prefetch",
      llvm::cl::desc("TMA tiles double-buffered, the next chunk's loaded "
                     "during the current one: auto (on; hla-opt drops it "
                     "where the second buffers push a kernel's buffers into "
                     "device-memory scratch), on or off"),
      llvm::cl::init(AutoSwitch::Auto), modeValues<AutoSwitch>()};
  PassOptions::Option<unsigned> indexBitwidth{
      *this, "index-bitwidth",
      llvm::cl::desc("Width of index arithmetic in kernels (32 or 64)"),
      llvm::cl::init(32)};
  PassOptions::Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("Function exported as hla_entry (executables)"),
      llvm::cl::init("")};
};

/// Model graph to kernels: hla-expand, the fused chunked form, bufferization,
/// thread blocks, outlined NVVM kernels and their PTX (`gpu.binary` objects
/// in `isa` form). The host code is left for buildCUDAHostPipeline.
void buildCUDADevicePipeline(OpPassManager &pm,
                             const CUDAPipelineOptions &options);
/// The device pipeline's two halves: the chunked form mapped onto thread
/// blocks, shared memory and tensor cores (where a kernel that streams its
/// state through device memory is marked `hla.device_scratch`), then the
/// outlined kernels' NVVM and PTX. The search judges a trial by the first
/// before paying for the second.
void buildCUDAKernelMapping(OpPassManager &pm,
                            const CUDAPipelineOptions &options);
void buildCUDAKernelCodegen(OpPassManager &pm,
                            const CUDAPipelineOptions &options);

/// The host half: launches through MLIR's mgpu* runtime calls, the rest to
/// the LLVM dialect, and the artefact C ABI.
void buildCUDAHostPipeline(OpPassManager &pm,
                           const CUDAPipelineOptions &options);

/// The CUDA toolkit root for the `toolkit` option's value: the value itself
/// when set, else $CUDA_HOME, else the toolkit CMake found when hla was
/// configured ("" if none).
std::string resolveCUDAToolkit(llvm::StringRef toolkit);

/// Registers hla-cpu-pipeline and hla-cuda-pipeline.
void registerHLAPipelines();

} // namespace mlir::hla

#endif // HLA_PIPELINES_PIPELINES_H
