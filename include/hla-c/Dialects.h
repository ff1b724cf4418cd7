/*===- Dialects.h - C API of the hla dialect -----------------------*- C -*-===*\
|*                                                                            *|
|* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef HLA_C_DIALECTS_H
#define HLA_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlirGetDialectHandle__hla__(): load or register the hla dialect. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(HLA, hla);

/* Adds the hla dialect and every upstream dialect, extension and LLVM IR
 * translation that hla's pipelines use to `registry` (what hla-opt has). */
MLIR_CAPI_EXPORTED void hlaRegisterAllDialects(MlirDialectRegistry registry);

/* Registers hla's passes and pipelines (and upstream's) with the global pass
 * registry, so that mlirParsePassPipeline understands them. Idempotent. */
MLIR_CAPI_EXPORTED void hlaRegisterAllPasses(void);

#ifdef __cplusplus
}
#endif

#endif /* HLA_C_DIALECTS_H */
