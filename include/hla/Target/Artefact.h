//===- Artefact.h - Compile a model graph to an artefact ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_TARGET_ARTEFACT_H
#define HLA_TARGET_ARTEFACT_H

#include "hla/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::hla {

/// What `hla-opt --hla-target=... --emit=...` produces.
struct ArtefactOptions {
  /// "cpu" (the only target so far).
  std::string target = "cpu";
  /// "llvm" (LLVM IR text), "obj", "shared" or "exe".
  std::string emit = "exe";
  std::string outputPath;
  /// The function an executable runs.
  std::string entry = "main";
  int64_t chunkSize = 64;
  /// "phased" or "fused" (hla-chunk's form).
  std::string chunkForm = "phased";
  std::string schedule = "auto";
  int64_t threads = 2;
  bool vectorize = true;
};

/// Runs the target's pipeline on `module` and writes the artefact. Reports
/// problems as diagnostics on the module (or its ops) and returns failure.
LogicalResult compileToArtefact(ModuleOp module, const ArtefactOptions &options);

} // namespace mlir::hla

#endif // HLA_TARGET_ARTEFACT_H
