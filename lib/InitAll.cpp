//===- InitAll.cpp - Register everything hla provides -----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla/InitAll.h"

#include "hla/Conversion/Passes.h"
#include "hla/Dialect/HLA/GPU/Passes.h"
#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"
#include "hla/Pipelines/Pipelines.h"
#include "hla/Target/CUDAKernelSearch.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::hla::registerAllDialects(DialectRegistry &registry) {
  registry.insert<hla::HLADialect>();
  // Model graphs mix hla ops with upstream ones, and the code-generation
  // pipelines walk the IR down through most of upstream's dialects (memref,
  // scf, vector, omp, llvm, gpu, nvvm...). Bufferization and the LLVM IR
  // export need the external interface models registered too.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  hla::registerHLAGPUInterfaceModels(registry);
}

void mlir::hla::registerAllPasses() {
  hla::registerHLAPasses();
  hla::registerHLAGPUPasses();
  hla::registerHLAConversionPasses();
  hla::registerHLAPipelines();
  hla::registerCUDAKernelSearch();
  // Upstream passes, so that every step of hla's pipelines can be run and
  // tested on its own from hla-opt.
  mlir::registerAllPasses();
}
