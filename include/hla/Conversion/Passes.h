//===- Passes.h - hla conversion passes ---------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_CONVERSION_PASSES_H
#define HLA_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::hla {

#define GEN_PASS_DECL
#include "hla/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hla/Conversion/Passes.h.inc"

} // namespace mlir::hla

#endif // HLA_CONVERSION_PASSES_H
