//===- hla-opt.cpp - hla optimizer and compiler driver ------------*- C++
//-*-===//
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
llvm::cl::opt<std::string>
    entry("entry", llvm::cl::desc("The function an executable runs"),
          llvm::cl::init("main"), llvm::cl::cat(artefactCategory));
llvm::cl::opt<int64_t>
    chunkSize("chunk-size",
              llvm::cl::desc("Tokens per chunk (default: 64 for CPUs, 32 "
                             "for CUDA)"),
              llvm::cl::init(0), llvm::cl::cat(artefactCategory));
llvm::cl::opt<std::string>
    chunkForm("chunk-form",
              llvm::cl::desc("CPU: chunked form: phased, fused or segmented"),
              llvm::cl::init("phased"), llvm::cl::cat(artefactCategory));
llvm::cl::opt<std::string>
    schedule("schedule",
             llvm::cl::desc("CPU: scan over chunks (sequential, blelloch, "
                            "auto); CUDA: kernel schedule (persistent, "
                            "segmented, auto)"),
             llvm::cl::init("auto"), llvm::cl::cat(artefactCategory));
llvm::cl::opt<bool> stableFeatures(
    "linsimp-stable-features",
    llvm::cl::desc("LinSimp: shift anchor-feature exponents by each query's "
                   "running maximum (cancels exactly; off to compare)"),
    llvm::cl::init(true), llvm::cl::cat(artefactCategory));
llvm::cl::opt<bool> causalIsolation(
    "causal-isolation",
    llvm::cl::desc("Outputs before a token holding NaN or inf stay finite (a "
                   "chunk holding one is read out a second time)"),
    llvm::cl::init(true), llvm::cl::cat(artefactCategory));
llvm::cl::opt<int64_t> segments(
    "segments",
    llvm::cl::desc("Segmented form/schedule: runs of chunks per sequence (0: "
                   "chosen for the target)"),
    llvm::cl::init(0), llvm::cl::cat(artefactCategory));
llvm::cl::opt<int64_t>
    threads("scan-threads",
            llvm::cl::desc("Threads the auto scan schedule plans for"),
            llvm::cl::init(2), llvm::cl::cat(artefactCategory));
llvm::cl::opt<bool> vectorize("vectorize",
                              llvm::cl::desc("Tile and vectorise chunk math"),
                              llvm::cl::init(true),
                              llvm::cl::cat(artefactCategory));
llvm::cl::opt<std::string> cudaChip("cuda-chip",
                                    llvm::cl::desc("CUDA: GPU architecture"),
                                    llvm::cl::init("sm_90a"),
                                    llvm::cl::cat(artefactCategory));
llvm::cl::opt<std::string> cudaFeatures("cuda-features",
                                        llvm::cl::desc("CUDA: PTX features"),
                                        llvm::cl::init("+ptx80"),
                                        llvm::cl::cat(artefactCategory));
llvm::cl::opt<std::string> cudaMma(
    "cuda-mma",
    llvm::cl::desc("CUDA: tensor-core instruction of chunk contractions "
                   "(auto: wgmma on sm_90a, mma.sync elsewhere; wgmma; "
                   "mma.sync)"),
    llvm::cl::init("auto"), llvm::cl::cat(artefactCategory));
llvm::cl::opt<int64_t> cudaThreads(
    "cuda-threads",
    llvm::cl::desc("CUDA: threads per thread block (a multiple of 128 for "
                   "wgmma)"),
    llvm::cl::init(256), llvm::cl::cat(artefactCategory));
llvm::cl::opt<std::string>
    cudaToolkit("cuda-toolkit",
                llvm::cl::desc("CUDA: toolkit root (ptxas, libdevice)"),
                llvm::cl::init(""), llvm::cl::cat(artefactCategory));
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
  options.entry = entry;
  // An explicit value is the user's (0 included, which is refused); else
  // the target's default.
  options.chunkSize =
      chunkSize.getNumOccurrences() ? chunkSize : (target == "cuda" ? 32 : 64);
  options.schedule = schedule;
  options.chunkForm = chunkForm;
  options.segments = segments;
  options.stableFeatures = stableFeatures;
  options.causalIsolation = causalIsolation;
  options.threads = threads;
  options.vectorize = vectorize;
  options.cudaChip = cudaChip;
  options.cudaFeatures = cudaFeatures;
  options.cudaMma = cudaMma;
  options.cudaThreads = cudaThreads;
  options.cudaToolkit = cudaToolkit;
  // ptxas's register and spill report, kept beside the artefact.
  if (target == "cuda")
    options.ptxasLog = outputPath.str() + ".ptxas.log";
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
  mlir::hla::registerAllPasses();
  // Test-only passes (test/lib), for FileCheck tests of internals.
  mlir::hla::test::registerTestMonoidPass();
  mlir::hla::test::registerTestChunkPlanPass();
  mlir::DialectRegistry registry;
  mlir::hla::registerAllDialects(registry);

  auto [inputPath, outputPath] = mlir::registerAndParseCLIOptions(
      argc, argv, "hla optimizer and compiler driver\n", registry);
  if (!emit.empty())
    return compileArtefact(inputPath, outputPath, registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputPath, outputPath, registry));
}
