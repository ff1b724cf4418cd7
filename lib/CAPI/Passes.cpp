//===- Passes.cpp - C API registration of hla's passes ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla-c/Passes.h"

#include "hla/Conversion/Passes.h"
#include "hla/Dialect/HLA/GPU/Passes.h"
#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/CAPI/Pass.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::hla;

#ifdef __cplusplus
extern "C" {
#endif

#include "hla/Conversion/Passes.capi.cpp.inc"
#include "hla/Dialect/HLA/GPU/Passes.capi.cpp.inc"
#include "hla/Dialect/HLA/Transforms/Passes.capi.cpp.inc"

#ifdef __cplusplus
}
#endif
