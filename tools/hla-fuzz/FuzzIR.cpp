//===- FuzzIR.cpp - libFuzzer target over MLIR text -------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each input is MLIR text. It is parsed with every dialect hla-opt knows,
// verified, and — when it verifies — run through hla-expand, hla-chunk,
// hla-lower-linsimp-exact and the CPU pipeline up to the LLVM dialect.
// Diagnostics are the expected answer to bad input and are dropped; a crash, a
// sanitizer report, a hang (libFuzzer's -timeout) or an unbounded allocation
// (-rss_limit_mb) is a finding. The seed corpus is the lit suite's .mlir files
// (see scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

#include "hla/InitAll.h"
#include "hla/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

namespace {
/// One registry for all inputs: registering dialects and passes is the
/// slow part and has no state that an input could change.
DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *reg = new DialectRegistry();
    hla::registerAllDialects(*reg);
    hla::registerAllPasses();
    return reg;
  }();
  return *r;
}

/// Runs `pipeline` (textual pass pipeline) on `module`; failures are fine.
bool runPipeline(ModuleOp module, llvm::StringRef pipeline) {
  PassManager pm(module->getName());
  if (failed(parsePassPipeline(pipeline, pm)))
    return false;
  return succeeded(pm.run(module));
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Larger inputs only slow the search; the lit files are all smaller.
  if (size > 16384)
    return -1;
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(false);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!module || failed(verify(*module)))
    return 0;
  // The algebra and chunked forms first (cheap, where most of hla's own
  // code runs), then the rest of the CPU pipeline on what they produce.
  if (!runPipeline(*module, "builtin.module(hla-expand,hla-chunk{chunk-size=8},"
                            "hla-lower-linsimp-exact{chunk-size=8})"))
    return 0;
  (void)runPipeline(*module, "builtin.module(hla-cpu-pipeline{chunk-size=8})");
  return 0;
}
