//===- hla-opt.cpp - hla optimizer driver -------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mlir-opt with the hla dialect, its passes and pipelines.
//
//===----------------------------------------------------------------------===//

#include "hla/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::hla::test {
void registerTestMonoidPass();
void registerTestChunkPlanPass();
} // namespace mlir::hla::test

int main(int argc, char **argv) {
  mlir::hla::registerAllPasses();
  // Test-only passes (test/lib), for FileCheck tests of internals.
  mlir::hla::test::registerTestMonoidPass();
  mlir::hla::test::registerTestChunkPlanPass();
  mlir::DialectRegistry registry;
  mlir::hla::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "hla optimizer driver\n", registry));
}
