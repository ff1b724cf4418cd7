//===- Pipelines.cpp - hla's code-generation pipelines -----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla/Pipelines/Pipelines.h"

#include "hla/Conversion/Passes.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::hla;

void mlir::hla::buildCPUPipeline(OpPassManager &pm,
                                 const CPUPipelineOptions &options) {
  // Attention ops -> segment / scan / readout under their monoids.
  pm.addPass(createHLAExpandPass());
  // Token scans -> chunk summaries, a scan over chunks, chunk readouts.
  pm.addPass(createHLAChunkPass(HLAChunkPassOptions{options.chunkSize}));
  // The scan over chunk summaries -> loops of hla.combine.
  pm.addPass(createHLALowerScansPass(
      HLALowerScansPassOptions{options.schedule, options.threads}));
  // hla.combine -> linalg; nothing of hla may remain after this point.
  pm.addPass(createConvertHLAToLinalgPass());
  pm.addPass(createHLAVerifyLoweredPass());
  // Model graphs use arith/math ops on whole tensors (residual adds, ...).
  pm.addPass(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // The artefact ABI needs the tensor signatures, which bufferization drops.
  pm.addPass(createHLARecordSignaturesPass(HLARecordSignaturesPassOptions{
      /*strict=*/!options.entry.empty()}));

  // Tensors -> buffers. Loops may carry fresh buffers (the scan's carry).
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Results become caller-provided buffers: the C ABI passes outputs in.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.modifyPublicFunctions = true;
  // Write results straight into the caller's buffer when they are static
  // allocations (saves a copy per output).
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createCanonicalizerPass());

  // linalg -> loops.
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
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // The C ABI of every public function (and hla_entry for executables).
  pm.addPass(createHLAEmitEntryABIPass(
      HLAEmitEntryABIPassOptions{options.entry}));
  pm.addPass(createCanonicalizerPass());
}

void mlir::hla::registerHLAPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "hla-cpu-pipeline",
      "Compile a model graph with hla ops to the LLVM dialect for CPUs",
      buildCPUPipeline);
}
