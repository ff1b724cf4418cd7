//===- Compiler.cpp - C entry points of the hla compiler --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla-c/Compiler.h"

#include "hla/Dialect/HLA/IR/RandomFeatures.h"
#include "hla/InitAll.h"
#include "hla/Target/Artefact.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;

/// A malloc'ed copy of `text`, which the caller frees with hlaFreeString.
static char *copyToC(llvm::StringRef text) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (!copy)
    return nullptr;
  std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  return copy;
}

/// Renders a diagnostic the way hla-opt prints it: "loc: error: message",
/// then its notes.
static void printDiagnostic(Diagnostic &diag, llvm::raw_ostream &os) {
  auto severity = [](DiagnosticSeverity s) {
    switch (s) {
    case DiagnosticSeverity::Error:
      return "error";
    case DiagnosticSeverity::Warning:
      return "warning";
    case DiagnosticSeverity::Note:
      return "note";
    case DiagnosticSeverity::Remark:
      return "remark";
    }
    return "error";
  };
  if (auto fileLoc = dyn_cast<FileLineColLoc>(diag.getLocation()))
    os << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine() << ":"
       << fileLoc.getColumn();
  else
    os << diag.getLocation();
  os << ": " << severity(diag.getSeverity()) << ": " << diag.str() << "\n";
  for (Diagnostic &note : diag.getNotes())
    printDiagnostic(note, os);
}

bool hlaCompile(const char *irText, const char *target, const char *emit,
                const char *options, const char *outputPath,
                char **diagnostics) {
  std::string messages;
  llvm::raw_string_ostream os(messages);
  auto finish = [&](bool ok) {
    if (diagnostics)
      *diagnostics = copyToC(messages);
    return ok;
  };
  if (!irText || !target || !emit || !outputPath) {
    os << "hlaCompile: the IR text, target, emit kind and output path must "
          "not be NULL\n";
    return finish(false);
  }

  hla::ArtefactOptions artefact;
  artefact.target = target;
  artefact.emit = emit;
  artefact.outputPath = outputPath;
  std::string error;
  if (failed(
          hla::parseArtefactOptions(options ? options : "", artefact, error))) {
    os << "hlaCompile: " << error << "\n";
    return finish(false);
  }

  DialectRegistry registry;
  hla::registerAllDialects(registry);
  // Compilation runs passes in one thread: callers that compile in parallel
  // call hlaCompile from several threads, each with its own context.
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // Callers show these messages to users: the op dump is noise there.
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    printDiagnostic(diag, os);
    return success();
  });
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(irText, config, "<input>");
  if (!module)
    return finish(false);
  return finish(succeeded(hla::compileToArtefact(*module, artefact)));
}

void hlaFreeString(char *string) { std::free(string); }

const char *hlaCompileOptionNames(void) {
  static const std::string names = [] {
    std::string all;
    for (const hla::ArtefactKnob &knob : hla::getArtefactKnobs())
      all += (all.empty() ? "" : " ") + knob.name;
    return all;
  }();
  return names.c_str();
}

const char *hlaCompilerVersion(void) {
  return "hla " HLA_VERSION " (LLVM " LLVM_VERSION_STRING ")";
}

bool hlaRandomFeatures(int64_t m, int64_t d, uint64_t seed, double *out) {
  if (m < 1 || d < 1 || m > (int64_t(1) << 24) / d || !out)
    return false;
  std::vector<double> omega = mlir::hla::generateRandomFeatures(m, d, seed);
  std::memcpy(out, omega.data(), omega.size() * sizeof(double));
  return true;
}
