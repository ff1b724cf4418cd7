//===- InitAll.cpp - Register everything hla provides -------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla/InitAll.h"

#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::hla::registerAllDialects(DialectRegistry &registry) {
  // Model graphs are func + linalg/tensor/arith/math around hla ops.
  registry.insert<hla::HLADialect, arith::ArithDialect, func::FuncDialect,
                  linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
}

void mlir::hla::registerAllPasses() {
  hla::registerHLAPasses();
  // The generic clean-ups that tests and pipelines combine with hla's.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
