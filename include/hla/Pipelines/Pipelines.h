//===- Pipelines.h - hla's code-generation pipelines --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_PIPELINES_PIPELINES_H
#define HLA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::hla {

/// Options of hla-cpu-pipeline.
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  PassOptions::Option<int64_t> chunkSize{
      *this, "chunk-size", llvm::cl::desc("Tokens per chunk"),
      llvm::cl::init(64)};
  PassOptions::Option<std::string> chunkForm{
      *this, "chunk-form",
      llvm::cl::desc("Chunked form: phased (parallel over chunks) or fused "
                     "(one carried loop per sequence and head)"),
      llvm::cl::init("phased")};
  PassOptions::Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Scan over chunks: sequential, blelloch or auto"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Threads the auto schedule plans for"),
      llvm::cl::init(2)};
  PassOptions::Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run parallel loops on OpenMP threads"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Tile and vectorise the chunk math"),
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

/// Registers hla-cpu-pipeline.
void registerHLAPipelines();

} // namespace mlir::hla

#endif // HLA_PIPELINES_PIPELINES_H
