//===- HLAPlugin.cpp - hla as a plugin of upstream mlir-opt -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// HLAPlugin.so lets a stock mlir-opt (or any tool built on MlirOptMain)
// work on hla IR:
//
//   mlir-opt --load-dialect-plugin=HLAPlugin.so \
//            --load-pass-plugin=HLAPlugin.so \
//            --pass-pipeline='builtin.module(hla-expand,hla-chunk)' in.mlir
//
// The dialect entry point registers the hla dialect; the pass entry point
// registers hla's passes, its GPU passes, its conversion and its pipelines.
// Plugin passes are only reachable through --pass-pipeline (mlir-opt parses
// its individual pass flags before the plugin is loaded).
//
//===----------------------------------------------------------------------===//

#include "hla/Conversion/Passes.h"
#include "hla/Dialect/HLA/GPU/Passes.h"
#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"
#include "hla/Pipelines/Pipelines.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#ifndef HLA_VERSION
#define HLA_VERSION "unknown"
#endif

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "hla", HLA_VERSION,
          [](mlir::DialectRegistry *registry) {
            registry->insert<mlir::hla::HLADialect>();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "hla", HLA_VERSION, []() {
            mlir::hla::registerHLAPasses();
            mlir::hla::registerHLAGPUPasses();
            mlir::hla::registerHLAConversionPasses();
            mlir::hla::registerHLAPipelines();
          }};
}
