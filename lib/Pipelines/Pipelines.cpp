//===- Pipelines.cpp - hla's code-generation pipelines ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla/Pipelines/Pipelines.h"

#include <cstdlib>

#include "hla/Conversion/Passes.h"
#include "hla/Dialect/HLA/GPU/Passes.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::hla;

/// One-shot bufferization at the artefact ABI: identity layouts at function
/// boundaries, results as caller-provided buffers (written in place when
/// they are static allocations, saving a copy per output), deallocations.
static void addBufferization(OpPassManager &pm, bool allowLoopAllocs) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.allowReturnAllocsFromLoops = allowLoopAllocs;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.modifyPublicFunctions = true;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createCanonicalizerPass());
}

void mlir::hla::buildCPUPipeline(OpPassManager &pm,
                                 const CPUPipelineOptions &options) {
  // Attention ops -> segment / scan / readout under their monoids.
  pm.addPass(createHLAExpandPass());
  // Token scans -> chunk summaries, a scan over chunks, chunk readouts.
  HLAChunkPassOptions chunking;
  chunking.chunkSize = options.chunkSize;
  chunking.form = options.chunkForm;
  chunking.segments = options.segments;
  chunking.valueTile = options.valueTile;
  chunking.parallelism = options.scanThreads;
  chunking.stableFeatures = options.stableFeatures;
  chunking.anchorRows = options.anchorRows;
  chunking.causalIsolation = options.causalIsolation;
  chunking.parallelGradients = options.parallelGradients == AutoSwitch::On;
  chunking.splitGradients = options.splitGradients;
  chunking.bf16Products = options.bf16Products == AutoSwitch::On;
  pm.addPass(createHLAChunkPass(chunking));
  pm.addPass(createHLALowerLinSimpExactPass(
      HLALowerLinSimpExactPassOptions{options.chunkSize}));
  // The scan over chunk summaries -> loops of hla.combine.
  pm.addPass(createHLALowerScansPass(
      HLALowerScansPassOptions{options.scanSchedule, options.scanThreads}));
  // hla.combine -> linalg; nothing of hla may remain after this point.
  pm.addPass(createConvertHLAToLinalgPass());
  pm.addPass(createHLAVerifyLoweredPass());
  // Model graphs use arith/math ops on whole tensors (residual adds, ...).
  pm.addPass(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  // Products shared by several index terms, computed once.
  pm.addPass(createHLAShareTileProductsPass());
  // Asked for only: the CPU's own parallel form is the phased one.
  if (options.hoistChunkWork == AutoSwitch::On &&
      options.chunkForm == ChunkForm::Fused)
    pm.addPass(createHLAHoistChunkWorkPass());
  if (options.fissionLiveBytes > 0)
    pm.addPass(createHLAFissionChunkPassesPass(
        HLAFissionChunkPassesPassOptions{options.fissionLiveBytes}));
  if (options.vectorize) {
    // Register tiles: the chunk math becomes vector code.
    pm.addPass(createHLAVectorizeTilesPass());
    pm.addPass(createCanonicalizerPass());
  }
  pm.addPass(createCSEPass());

  // The artefact ABI needs the tensor signatures, which bufferization drops.
  pm.addPass(createHLARecordSignaturesPass(
      HLARecordSignaturesPassOptions{/*strict=*/!options.entry.empty()}));

  // Tensors -> buffers. Loops may carry fresh buffers (the scan's carry).
  addBufferization(pm, /*allowLoopAllocs=*/true);

  // Bufferization leaves copies of a subview onto an identical subview;
  // once CSE makes the two one value, canonicalization drops the copy.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  if (options.vectorize) {
    // Multi-dimensional vector ops -> 1-D vector operations.
    pm.addNestedPass<func::FuncOp>(
        vector::createLowerVectorMultiReductionPass());
    // Fully unrolled: transfers of 2-D tiles become 1-D vector accesses
    // without stack buffers (an alloca would pin scf-to-openmp's
    // alloca_scope, which must be gone before the CFG conversion).
    pm.addPass(createConvertVectorToSCFPass(
        VectorTransferToSCFOptions().enableFullUnroll()));
    pm.addPass(createCanonicalizerPass());
  }
  // linalg -> loops (what the vectoriser did not take).
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Parallel chunk loops -> OpenMP worksharing.
  pm.addPass(createForallToParallelLoopPass());
  if (options.parallel) {
    pm.addPass(createConvertSCFToOpenMPPass());
    // Removes the alloca scopes scf-to-openmp wraps bodies in (they hold no
    // allocas here) before the bodies turn into multi-block CFGs.
    pm.addPass(createCanonicalizerPass());
  }
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Run-time checks report through the runtime (stderr, exit status 2).
  pm.addPass(createHLALowerAssertsPass());

  // Everything -> LLVM.
  ConvertVectorToLLVMPassOptions vectorOptions;
  // The reductions here are sums of products of a chunk's tiles; their order
  // changes rounding only.
  vectorOptions.reassociateFPReductions = true;
  // Contractions as outer products: per reduction step, a broadcast of the
  // row operand times one vector row (fused multiply-adds).
  vectorOptions.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // The C ABI of every public function (and hla_entry for executables).
  pm.addPass(
      createHLAEmitEntryABIPass(HLAEmitEntryABIPassOptions{options.entry}));
  pm.addPass(createCanonicalizerPass());
}

void mlir::hla::buildCUDADevicePipeline(OpPassManager &pm,
                                        const CUDAPipelineOptions &options) {
  buildCUDAKernelMapping(pm, options);
  buildCUDAKernelCodegen(pm, options);
}

void mlir::hla::buildCUDAKernelMapping(OpPassManager &pm,
                                       const CUDAPipelineOptions &options) {
  // Attention ops -> one loop over chunks per (sequence, head), carrying the
  // state: the persistent-kernel schedule, each thread block owning a
  // (sequence, head) and its state for the whole sequence. Or, segmented:
  // one thread block per (sequence, segment, head) for each of the two
  // passes over a sequence's runs of chunks.
  pm.addPass(createHLAExpandPass());
  // Chunks of 32 tokens unless told: the fastest on the phases at every
  // benchmark shape on an H200.
  int64_t chunkSize = options.chunkSize ? int64_t(options.chunkSize) : 32;
  HLAChunkPassOptions chunking;
  chunking.chunkSize = chunkSize;
  chunking.parallelism = options.parallelism;
  chunking.causalIsolation = options.causalIsolation;
  chunking.stableFeatures = options.stableFeatures;
  chunking.anchorRows =
      options.anchorRows ? options.anchorRows : kDefaultAnchorRows;
  chunking.segments = options.segments;
  chunking.valueTile = options.valueTile;
  // Register tiles run the gradients' products with every chunk in
  // parallel; the phases keep them in the reverse pass (a third pass cost
  // them time: hla2 8x16x2048 9.53 ms against 7.21, H200 2026-12-03).
  chunking.parallelGradients = options.parallelGradients == AutoSwitch::On ||
                               (options.parallelGradients == AutoSwitch::Auto &&
                                options.generator == ChunkLoopGenerator::Tiles);
  chunking.splitGradients = options.splitGradients;
  // Tensor cores take bf16 operands (for 16-bit ops unless turned off).
  chunking.bf16Products = options.bf16Products == AutoSwitch::On ||
                          (options.bf16Products == AutoSwitch::Auto &&
                           options.tensorCores != AutoSwitch::Off);
  // The auto schedule is segmented here (hla-chunk's segment count falls
  // back to one run where the pairs fill the GPU); the artefact's search
  // decides between the two by trial.
  chunking.form = options.schedule == KernelSchedule::Persistent
                      ? ChunkForm::Fused
                      : ChunkForm::Segmented;
  pm.addPass(createHLAChunkPass(chunking));
  pm.addPass(createHLALowerLinSimpExactPass(
      HLALowerLinSimpExactPassOptions{chunkSize}));
  pm.addPass(createConvertHLAToLinalgPass());
  pm.addPass(createHLAVerifyLoweredPass());
  // Whole-tensor arith of model graphs as linalg (bufferizable; refused as
  // host work by hla-gpu-map-chunk-loops until the graph ops get kernels).
  pm.addPass(createConvertElementwiseToLinalgPass());
  // Products shared by several index terms, computed once.
  pm.addPass(createHLAShareTileProductsPass());
  // One op per elementwise chain (fewer shared-memory passes and barriers).
  pm.addPass(createHLAFuseTileElementwisePass());
  // Sums of products accumulated into one tile (fewer fragments alive).
  pm.addPass(createHLAAccumulateTileProductsPass());
  // The persistent kernel's work that does not read the state (KDA's
  // decays, pairs, solve, W and U: 21 of its 25 products per chunk) in a
  // kernel with every chunk in parallel ahead of it; its tiles go through
  // device memory in bf16 where only tensor cores read them.
  bool hoist = options.hoistChunkWork == AutoSwitch::On ||
               (options.hoistChunkWork == AutoSwitch::Auto &&
                options.generator == ChunkLoopGenerator::Tiles);
  hoist = hoist && chunking.form == ChunkForm::Fused;
  if (hoist) {
    HLAHoistChunkWorkPassOptions hoisting;
    hoisting.bf16Operands = true;
    pm.addPass(createHLAHoistChunkWorkPass(hoisting));
  }
  // Register tiles: sums of products added a term at a time (a fused sum
  // keeps every term's product alive until it is read).
  if (options.generator != ChunkLoopGenerator::Phases)
    pm.addPass(createHLASplitTileSumsPass());
  // Passes parallel over chunks whose tiles would not fit the registers
  // at once (KDA's gradients) cut into stages, tiles between them in
  // device memory (bf16 where only tensor cores read them).
  if (options.fissionLiveBytes > 0)
    pm.addPass(createHLAFissionChunkPassesPass(
        HLAFissionChunkPassesPassOptions{options.fissionLiveBytes,
                                         /*bf16Operands=*/true}));
  // The model graph's own ops (projections, norms, gathers) as loops of
  // row blocks: kernels too, like the chunk loops.
  pm.addNestedPass<func::FuncOp>(createHLAGPUDistributeGraphOpsPass(
      HLAGPUDistributeGraphOpsPassOptions{/*rows=*/16,
                                          /*cublasMatmuls=*/true}));
  // No CSE before bufferization: merged zero fills of accumulators would
  // become one zero tile kept alive for the whole loop and copied into
  // every accumulator.
  pm.addPass(createCanonicalizerPass());
  // Chunk loops whose tiles fit in registers -> kernels with the tiles as
  // values (before bufferization, so that they never get buffers).
  if (options.generator != ChunkLoopGenerator::Phases)
    pm.addNestedPass<func::FuncOp>(
        createHLAGPULowerRegisterTilesPass(HLAGPULowerRegisterTilesPassOptions{
            options.generator, /*report=*/false, options.maxSharedMemory,
            options.warpgroups, /*landF32Stacks=*/hoist}));
  // Their kernels outlined now: bufferization's deallocation refuses the
  // NVVM ops of a launch body (ops of unknown effects), not the launch.
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createHLARecordSignaturesPass(
      HLARecordSignaturesPassOptions{/*strict=*/!options.entry.empty()}));

  // Tensors -> buffers; the chunk loops' buffers stay inside them.
  addBufferization(pm, /*allowLoopAllocs=*/false);
  pm.addPass(createCSEPass());

  // The graph's matrix products -> cuBLAS calls.
  pm.addNestedPass<func::FuncOp>(createHLAGPUMatmulsToCublasPass());
  // (sequence, head) loops -> thread blocks; buffers -> shared memory.
  pm.addNestedPass<func::FuncOp>(
      createHLAGPUMapChunkLoopsPass(HLAGPUMapChunkLoopsPassOptions{
          options.blockThreads, options.maxSharedMemory, options.tensorCores,
          options.mma == MmaInstruction::Auto
              ? (options.chip == "sm_90a" ? MmaInstruction::Wgmma
                                          : MmaInstruction::MmaSync)
              : options.mma.getValue(),
          /*tma=*/options.tma == AutoSwitch::On ||
              (options.tma == AutoSwitch::Auto && options.chip == "sm_90a"),
          /*tmaPrefetch=*/options.tmaPrefetch != AutoSwitch::Off}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Constants back into the kernels (canonicalization hoisted them out of
  // the launch bodies): passed as parameters, every size would be a
  // run-time value, and index math would divide by registers.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
}

void mlir::hla::buildCUDAKernelCodegen(OpPassManager &pm,
                                       const CUDAPipelineOptions &options) {
  // Kernels -> NVVM -> PTX.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  // 32-bit index arithmetic: 64-bit integer math is emulated on GPUs. The
  // artefact driver picks 64 for tensors of 2^31 elements or more.
  nvvm.indexBitwidth = options.indexBitwidth;
  // cp.async of the register-tile kernels (nvgpu.device_async_copy).
  kernels.addPass(createHLAGPULowerAsyncCopiesPass(
      HLAGPULowerAsyncCopiesPassOptions{unsigned(options.indexBitwidth)}));
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  // NVVM ops that LLVM has no intrinsics for (wgmma with descriptors, proxy
  // fences) as inline PTX.
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createHLAGPUFinalizeKernelsPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = resolveCUDAToolkit(options.toolkit);
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::hla::buildCUDAHostPipeline(OpPassManager &pm,
                                      const CUDAPipelineOptions &options) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createHLALowerAssertsPass());
  // Kernels queued on the stream; the host waits only where it reads.
  pm.addNestedPass<func::FuncOp>(createHLAGPUQueueLaunchesPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(
      createHLAEmitEntryABIPass(HLAEmitEntryABIPassOptions{options.entry}));
  pm.addPass(createCanonicalizerPass());
}

std::string mlir::hla::resolveCUDAToolkit(llvm::StringRef toolkit) {
  if (!toolkit.empty())
    return toolkit.str();
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
#ifdef HLA_CONFIGURED_CUDA_TOOLKIT
  return HLA_CONFIGURED_CUDA_TOOLKIT;
#else
  return "";
#endif
}

void mlir::hla::registerHLAPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "hla-cpu-pipeline",
      "Compile a model graph with hla ops to the LLVM dialect for CPUs",
      buildCPUPipeline);
  PassPipelineRegistration<CUDAPipelineOptions>(
      "hla-cuda-pipeline",
      "Compile a model graph with hla ops to CUDA kernels (PTX in "
      "gpu.binary) and LLVM-dialect host code that launches them",
      [](OpPassManager &pm, const CUDAPipelineOptions &options) {
        buildCUDADevicePipeline(pm, options);
        buildCUDAHostPipeline(pm, options);
      });
}
