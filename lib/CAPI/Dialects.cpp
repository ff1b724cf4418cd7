//===- Dialects.cpp - C API of the hla dialect --------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla-c/Dialects.h"

#include "hla/Dialect/HLA/IR/HLADialect.h"
#include "hla/InitAll.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(HLA, hla, mlir::hla::HLADialect)

void hlaRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::hla::registerAllDialects(*unwrap(registry));
}

void hlaRegisterAllPasses(void) {
  // The global pass registry rejects a second registration of a name.
  static std::once_flag once;
  std::call_once(once, [] { mlir::hla::registerAllPasses(); });
}
