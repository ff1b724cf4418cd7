/*===- Compiler.h - Coarse C entry points of the hla compiler -----*- C -*-===*\
|*                                                                            *|
|* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
/*
 * What `hla-opt FILE --hla-target=T --emit=E -o OUT` does, as one call, for
 * programs (and the Python package) that embed the compiler:
 *
 *   char *diagnostics = NULL;
 *   if (!hlaCompile(ir, "cpu", "shared", "chunk-size=64", "model.so",
 *                   &diagnostics))
 *     fprintf(stderr, "%s", diagnostics);
 *   hlaFreeString(diagnostics);
 *
 * The options string holds space-separated key=value pairs, the options
 * hla-opt takes as flags (`hla-opt --help`, "hla artefact options";
 * hlaCompileOptionNames lists the keys), e.g. chunk-size, chunk-form,
 * scan-schedule, cuda-schedule, segments, causal-isolation, scan-threads,
 * cuda-mma, cuda-threads. A bad value or an unknown key is an error that
 * names it.
 */

#ifndef HLA_C_COMPILER_H
#define HLA_C_COMPILER_H

#include <stdbool.h>
#include <stdint.h>

/* Exported from libHLACAPI.so. Defined here so that this header needs no
 * other include directory than hla's. */
#ifndef HLA_CAPI_EXPORTED
#define HLA_CAPI_EXPORTED __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Parses `irText` (MLIR assembly of a module), runs the target's pipeline and
 * writes the artefact `emit` (llvm, obj, shared or exe) to `outputPath`.
 * Returns true on success. Every diagnostic the compiler produced (errors,
 * warnings, notes, with their locations) is returned as text through
 * `*diagnostics` when it is not NULL; free it with hlaFreeString. Thread
 * safe: each call uses its own MLIRContext. */
HLA_CAPI_EXPORTED bool hlaCompile(const char *irText, const char *target,
                                  const char *emit, const char *options,
                                  const char *outputPath, char **diagnostics);

/* The keys hlaCompile's options string takes, space-separated (the same
 * options hla-opt takes as flags: lib/Target/ArtefactOptions.cpp). */
HLA_CAPI_EXPORTED const char *hlaCompileOptionNames(void);

/* Releases a string returned by this API. NULL is allowed. */
HLA_CAPI_EXPORTED void hlaFreeString(char *string);

/* The compiler's version: the project version and the LLVM it was built
 * against, e.g. "hla 0.1.0 (LLVM 22.1.8)". Artefact caches key on it. */
HLA_CAPI_EXPORTED const char *hlaCompilerVersion(void);

/* LinSimp's random feature matrix Ω [m, d] for `seed` (what the op
 * hla.random_features becomes), row-major into `out` (m * d doubles).
 * Returns false (writing nothing) unless m >= 1, d >= 1 and m * d <= 2^24. */
HLA_CAPI_EXPORTED bool hlaRandomFeatures(int64_t m, int64_t d, uint64_t seed,
                                         double *out);

#ifdef __cplusplus
}
#endif

#endif /* HLA_C_COMPILER_H */
