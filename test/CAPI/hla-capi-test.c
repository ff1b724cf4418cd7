/*===- hla-capi-test.c - Exercise libHLACAPI from C ---------------*- C -*-===*\
|*                                                                            *|
|* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
/* Run by test/CAPI/capi.test: hla-capi-test WORKDIR | FileCheck. */

#include "hla-c/Compiler.h"
#include "hla-c/Dialects.h"
#include "hla-c/Passes.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// CHECK: version hla {{[0-9]+\.[0-9]+\.[0-9]+}} (LLVM 22.

static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

/* A masked hla2 over [1, 5, 1, 2]: small enough to check by hand below. */
static const char *kHla2Module =
    "func.func @attend(%q: tensor<1x5x1x2xf32>, %k: tensor<1x5x1x2xf32>,\n"
    "                  %v: tensor<1x5x1x2xf32>) -> tensor<1x5x1x2xf32> {\n"
    "  %o = hla.hla2 %q, %k, %v {scale = 1.0}\n"
    "      : (tensor<1x5x1x2xf32>, tensor<1x5x1x2xf32>, tensor<1x5x1x2xf32>)\n"
    "      -> tensor<1x5x1x2xf32>\n"
    "  return %o : tensor<1x5x1x2xf32>\n"
    "}\n";

/* Parses, verifies and prints an hla module; runs hla-expand through the pass
 * constructor the C API generates. */
static int testDialectAndPasses(void) {
  // CHECK-LABEL: {{^}}test_dialect_and_passes{{$}}
  printf("test_dialect_and_passes\n");
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  hlaRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  MlirDialect hla =
      mlirContextGetOrLoadDialect(ctx, mlirStringRefCreateFromCString("hla"));
  MlirDialectHandle handle = mlirGetDialectHandle__hla__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(handle);
  printf("namespace %.*s loaded %d\n", (int)ns.length, ns.data,
         !mlirDialectIsNull(hla));

  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kHla2Module));
  if (mlirModuleIsNull(module)) {
    printf("parse failed\n");
    return 1;
  }
  MlirOperation op = mlirModuleGetOperation(module);
  printf("verified %d\n", mlirOperationVerify(op));
  mlirOperationPrint(op, printToStdout, NULL);

  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager funcPm = mlirPassManagerGetNestedUnder(
      pm, mlirStringRefCreateFromCString("func.func"));
  mlirOpPassManagerAddOwnedPass(funcPm, mlirCreateHLAHLAExpandPass());
  MlirLogicalResult result = mlirPassManagerRunOnOp(pm, op);
  printf("expand succeeded %d\n", mlirLogicalResultIsSuccess(result));
  mlirOperationPrint(op, printToStdout, NULL);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}
// CHECK: namespace hla loaded 1
// CHECK: verified 1
// CHECK: hla.hla2
// CHECK: expand succeeded 1
// CHECK-NOT: hla.hla2
// CHECK: hla.segment
// CHECK: hla.scan
// CHECK: hla.readout

/* hla's pipelines parse from text once hlaRegisterAllPasses has run. */
static int testPipelineParsing(void) {
  // CHECK-LABEL: {{^}}test_pipeline_parsing{{$}}
  printf("test_pipeline_parsing\n");
  hlaRegisterAllPasses();
  hlaRegisterAllPasses(); /* idempotent */
  MlirContext ctx = mlirContextCreate();
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      opm,
      mlirStringRefCreateFromCString("builtin.module(hla-cpu-pipeline{chunk-"
                                     "size=16 scan-schedule=blelloch})"),
      printToStdout, NULL);
  printf("\nparsed %d\n", mlirLogicalResultIsSuccess(parsed));
  mlirPassManagerDestroy(pm);
  mlirContextDestroy(ctx);
  return 0;
}
// CHECK: parsed 1

/* SEMANTICS.md's masked hla2 without decay, in float64, from its definition:
 * o_t = sum_{j<=t} sum_{i<=j} (q_t . k_i)(q_j . k_i) v_j. */
static void referenceHla2(const float *q, const float *k, const float *v, int T,
                          int d, double *o) {
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < d; ++c) {
      double acc = 0;
      for (int j = 0; j <= t; ++j)
        for (int i = 0; i <= j; ++i) {
          double qtki = 0, qjki = 0;
          for (int e = 0; e < d; ++e) {
            qtki += (double)q[t * d + e] * k[i * d + e];
            qjki += (double)q[j * d + e] * k[i * d + e];
          }
          acc += qtki * qjki * v[j * d + c];
        }
      o[t * d + c] = acc;
    }
}

/* Compiles the module to a shared library, loads it and calls its C ABI. */
static int testCompileAndRun(const char *workdir) {
  // CHECK-LABEL: {{^}}test_compile_and_run{{$}}
  printf("test_compile_and_run\n");
  char path[4096];
  snprintf(path, sizeof(path), "%s/attend.so", workdir);
  char *diagnostics = NULL;
  int ok = hlaCompile(kHla2Module, "cpu", "shared", "chunk-size=2", path,
                      &diagnostics);
  printf("compiled %d diagnostics '%s'\n", ok, diagnostics ? diagnostics : "");
  hlaFreeString(diagnostics);
  if (!ok)
    return 1;
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("dlopen failed: %s\n", dlerror());
    return 1;
  }
  typedef int32_t (*EntryFn)(void *const *, void *const *);
  typedef const char *(*LastErrorFn)(void);
  EntryFn attend = (EntryFn)dlsym(lib, "hla_attend");
  const char *signature = (const char *)dlsym(lib, "hla_attend_signature");
  printf("signature %s\n", signature ? signature : "(missing)");

  enum { T = 5, D = 2 };
  float q[T * D], k[T * D], v[T * D], o[T * D];
  srand(7);
  for (int i = 0; i < T * D; ++i) {
    q[i] = (float)((double)rand() / RAND_MAX) - 0.5f;
    k[i] = (float)((double)rand() / RAND_MAX) - 0.5f;
    v[i] = (float)((double)rand() / RAND_MAX) - 0.5f;
    o[i] = NAN;
  }
  void *inputs[] = {q, k, v};
  void *outputs[] = {o};
  int32_t status = attend(inputs, outputs);
  LastErrorFn lastError = (LastErrorFn)dlsym(lib, "hla_last_error");
  const char *message = lastError ? lastError() : "(no hla_last_error)";
  printf("status %d error '%s'\n", status, message ? message : "");
  double expected[T * D];
  referenceHla2(q, k, v, T, D, expected);
  double worst = 0, scale = 0;
  for (int i = 0; i < T * D; ++i) {
    worst = fmax(worst, fabs(o[i] - expected[i]));
    scale = fmax(scale, fabs(expected[i]));
  }
  printf("max relative error below 1e-5: %d\n", worst <= 1e-5 * scale);
  dlclose(lib);
  return 0;
}
// CHECK: compiled 1 diagnostics ''
// CHECK: signature attend|f32:1x5x1x2,f32:1x5x1x2,f32:1x5x1x2|f32:1x5x1x2
// CHECK: status 0 error ''
// CHECK: max relative error below 1e-5: 1

/* Errors come back as text with their locations, never as a crash. */
static int testDiagnostics(const char *workdir) {
  // CHECK-LABEL: {{^}}test_diagnostics{{$}}
  printf("test_diagnostics\n");
  char path[4096];
  snprintf(path, sizeof(path), "%s/bad.so", workdir);
  char *diagnostics = NULL;
  const char *badHeads =
      "func.func @f(%q: tensor<1x4x3x2xf32>, %k: tensor<1x4x2x2xf32>,\n"
      "             %v: tensor<1x4x2x2xf32>) -> tensor<1x4x3x2xf32> {\n"
      "  %o = hla.hla2 %q, %k, %v : (tensor<1x4x3x2xf32>,\n"
      "      tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x3x2xf32>\n"
      "  return %o : tensor<1x4x3x2xf32>\n"
      "}\n";
  int ok = hlaCompile(badHeads, "cpu", "shared", "", path, &diagnostics);
  printf("bad heads: ok %d\n%s", ok, diagnostics);
  hlaFreeString(diagnostics);

  ok = hlaCompile("func.func @f( {", "cpu", "shared", "", path, &diagnostics);
  printf("syntax: ok %d\n%s", ok, diagnostics);
  hlaFreeString(diagnostics);

  ok = hlaCompile(kHla2Module, "cpu", "shared", "chunk-size=0", path,
                  &diagnostics);
  printf("option: ok %d\n%s", ok, diagnostics);
  hlaFreeString(diagnostics);

  ok = hlaCompile(kHla2Module, "cpu", "shared", "tile=4", path, &diagnostics);
  printf("unknown option: ok %d\n%s", ok, diagnostics);
  hlaFreeString(diagnostics);

  ok = hlaCompile(kHla2Module, "tpu", "shared", "", path, &diagnostics);
  printf("target: ok %d\n%s", ok, diagnostics);
  hlaFreeString(diagnostics);

  ok = hlaCompile(NULL, "cpu", "shared", "", path, &diagnostics);
  printf("null: ok %d\n%s", ok, diagnostics);
  hlaFreeString(diagnostics);
  return 0;
}
// CHECK: bad heads: ok 0
// CHECK-NEXT: <input>:3:8: error: 'hla.hla2' op query head count 3 is not a multiple of the key/value head count 2
// CHECK-NOT: see current operation
// CHECK: syntax: ok 0
// CHECK-NEXT: <input>:1:14: error: expected non-function type
// CHECK: option: ok 0
// CHECK-NEXT: hlaCompile: option 'chunk-size' needs an integer in [1, 1048576], not '0'
// CHECK: unknown option: ok 0
// CHECK-NEXT: hlaCompile: unknown option 'tile'
// CHECK: target: ok 0
// CHECK-NEXT: <input>:0:0: error: hla-opt: --hla-target=tpu is not supported (targets: cpu, cuda)
// CHECK: null: ok 0
// CHECK-NEXT: hlaCompile: the IR text, target, emit kind and output path must not be NULL

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
    return 2;
  }
  printf("version %s\n", hlaCompilerVersion());
  if (testDialectAndPasses() || testPipelineParsing() ||
      testCompileAndRun(argv[1]) || testDiagnostics(argv[1]))
    return 1;
  return 0;
}
