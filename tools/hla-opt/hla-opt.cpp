//===- hla-opt.cpp - hla optimizer and compiler driver ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mlir-opt with the hla dialect, its passes and pipelines; with --emit it is
// also hla's compiler driver:
//
//   hla-opt model.mlir --hla-target=cpu --emit=exe -o model
//
//===----------------------------------------------------------------------===//

#include "hla/InitAll.h"
#include "hla/Target/Artefact.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

namespace mlir::hla::test {
void registerTestMonoidPass();
void registerTestChunkPlanPass();
void registerTestReverseDiffPass();
void registerTestPrepareTilesPass();
} // namespace mlir::hla::test

namespace {
// The artefact flags. Everything else is mlir-opt's.
llvm::cl::OptionCategory artefactCategory("hla artefact options");
llvm::cl::opt<std::string>
    emit("emit",
         llvm::cl::desc("Compile to an artefact: llvm, obj, shared, exe "
                        "(and for cuda ptx, cubin: one file per kernel "
                        "module, k.ptx -> k.<module>.ptx when several)"),
         llvm::cl::init(""), llvm::cl::cat(artefactCategory));
llvm::cl::opt<std::string>
    target("hla-target", llvm::cl::desc("Artefact target: cpu or cuda"),
           llvm::cl::init("cpu"), llvm::cl::cat(artefactCategory));
/// The artefact options (lib/Target/ArtefactOptions.cpp lists them), one
/// flag each; given ones are handed to the same parser the C API uses.
std::vector<std::unique_ptr<llvm::cl::opt<std::string>>> knobFlags;

void registerKnobFlags() {
  // The options keep references to their names and help texts.
  static const std::vector<mlir::hla::ArtefactKnob> knobs = [] {
    std::vector<mlir::hla::ArtefactKnob> all = mlir::hla::getArtefactKnobs();
    for (mlir::hla::ArtefactKnob &knob : all)
      knob.help += " (default: " +
                   (knob.defaultValue.empty() ? "none" : knob.defaultValue) +
                   ")";
    return all;
  }();
  for (const mlir::hla::ArtefactKnob &knob : knobs)
    knobFlags.push_back(std::make_unique<llvm::cl::opt<std::string>>(
        llvm::StringRef(knob.name), llvm::cl::desc(knob.help),
        llvm::cl::ValueOptional, llvm::cl::cat(artefactCategory)));
}
} // namespace

/// Parses the input and compiles it to the requested artefact.
static int compileArtefact(llvm::StringRef inputPath,
                           llvm::StringRef outputPath,
                           mlir::DialectRegistry &registry) {
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // A failing compile reports what failed and where, not the whole module
  // (--mlir-print-ir-after-failure prints it when asked).
  context.printOpOnDiagnostic(false);
  std::string error;
  auto file = mlir::openInputFile(inputPath, &error);
  if (!file) {
    llvm::errs() << "hla-opt: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  mlir::hla::ArtefactOptions options;
  options.target = target;
  options.emit = emit;
  options.outputPath = outputPath.str();
  // ptxas's register and spill report, kept beside the artefact.
  if (target == "cuda")
    options.ptxasLog = outputPath.str() + ".ptxas.log";
  for (const auto &flag : knobFlags) {
    if (!flag->getNumOccurrences())
      continue;
    std::string error;
    if (mlir::failed(mlir::hla::setArtefactOption(flag->ArgStr, *flag, options,
                                                  error))) {
      llvm::errs() << "error: hla-opt: " << error << "\n";
      return 1;
    }
  }
  options.passManagerCLOptions = true;
  options.reportCUDAOptions = true;
  // --mlir-timing: every phase of the compile, passes one by one.
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope root = timing.getRootScope();
  if (timing.isEnabled())
    options.timing = &root;
  return mlir::failed(mlir::hla::compileToArtefact(*module, options)) ? 1 : 0;
}

int main(int argc, char **argv) {
  registerKnobFlags();
  mlir::hla::registerAllPasses();
  // Test-only passes (test/lib), for FileCheck tests of internals.
  mlir::hla::test::registerTestMonoidPass();
  mlir::hla::test::registerTestChunkPlanPass();
  mlir::hla::test::registerTestReverseDiffPass();
  mlir::hla::test::registerTestPrepareTilesPass();
  mlir::DialectRegistry registry;
  mlir::hla::registerAllDialects(registry);

  auto [inputPath, outputPath] = mlir::registerAndParseCLIOptions(
      argc, argv, "hla optimizer and compiler driver\n", registry);
  if (!emit.empty())
    return compileArtefact(inputPath, outputPath, registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputPath, outputPath, registry));
}
