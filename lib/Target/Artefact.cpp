//===- Artefact.cpp - Compile a model graph to an artefact --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The back half of `hla-opt --emit=...`: the target pipeline to the LLVM
// dialect, translation to LLVM IR, LLVM's -O3 for the host CPU, an object
// file, and — for executables and shared libraries — a link against hla's
// small C runtime and the OpenMP runtime with the system's C compiler
// driver. Nothing of MLIR or LLVM ends up in the artefact.
//
//===----------------------------------------------------------------------===//

#include "hla/Target/Artefact.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::hla;

/// The directory holding libhla_cpu_runtime*.a: $HLA_RUNTIME_DIR, or the
/// build tree's lib/.
static std::string runtimeDirectory() {
  if (const char *env = std::getenv("HLA_RUNTIME_DIR"))
    return env;
  return HLA_RUNTIME_LIBRARY_DIR;
}

/// A target machine for the host CPU with all its features (AVX-512 where
/// present), position-independent so that one object serves executables and
/// shared libraries.
static std::unique_ptr<llvm::TargetMachine> hostTargetMachine(std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::SubtargetFeatures features;
  for (auto &feature : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature.first(), feature.second);
  llvm::TargetOptions options;
  // Fuse multiplies and adds into FMAs wherever the code computes a*b+c (the
  // tests hold f32 results to 1e-5, well above the rounding change).
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), options,
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    error = "cannot create a target machine for " + triple.str();
  return machine;
}

static LogicalResult writeObject(llvm::Module &module,
                                 llvm::TargetMachine &machine,
                                 llvm::StringRef path, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, out, nullptr,
                                  llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return failure();
  }
  passes.run(module);
  return success();
}

/// Links `object` into `output` with the C compiler driver.
static LogicalResult link(llvm::StringRef object, llvm::StringRef output,
                          bool shared, std::string &error) {
  std::string runtime =
      runtimeDirectory() + (shared ? "/libhla_cpu_runtime_nomain.a"
                                   : "/libhla_cpu_runtime.a");
  if (!llvm::sys::fs::exists(runtime)) {
    error = "the hla runtime library '" + runtime +
            "' is missing (build it, or set HLA_RUNTIME_DIR)";
    return failure();
  }
  llvm::SmallVector<std::string> args = {HLA_LINKER_DRIVER};
  if (shared)
    args.push_back("-shared");
  llvm::append_range(args, llvm::ArrayRef<std::string>{
                               object.str(), runtime, "-o", output.str(),
                               "-lomp", "-lm", "-lpthread"});
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(args[0], argRefs, std::nullopt, {}, 0,
                                         0, &message);
  if (status != 0) {
    error = "linking failed (" + llvm::join(args, " ") + ")" +
            (message.empty() ? "" : ": " + message);
    return failure();
  }
  return success();
}

LogicalResult mlir::hla::compileToArtefact(ModuleOp module,
                                           const ArtefactOptions &options) {
  auto fail = [&](const llvm::Twine &message) {
    return module.emitError() << "hla-opt: " << message;
  };
  if (options.target != "cpu")
    return fail("--hla-target=" + options.target +
                " is not supported (targets: cpu)");
  if (!llvm::is_contained({"llvm", "obj", "shared", "exe"}, options.emit))
    return fail("--emit=" + options.emit +
                " is not supported (llvm, obj, shared or exe)");
  if (options.outputPath.empty() || options.outputPath == "-")
    return fail("--emit=" + options.emit + " needs an output file (-o)");

  // The target pipeline, down to the LLVM dialect with the artefact ABI.
  CPUPipelineOptions pipeline;
  pipeline.chunkSize = options.chunkSize;
  pipeline.chunkForm = options.chunkForm;
  pipeline.schedule = options.schedule;
  pipeline.threads = options.threads;
  pipeline.vectorize = options.vectorize;
  if (options.emit == "exe")
    pipeline.entry = options.entry;
  PassManager pm(module.getContext());
  buildCPUPipeline(pm, pipeline);
  if (failed(pm.run(module)))
    return failure();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "hla");
  if (!llvmModule)
    return fail("translation to LLVM IR failed");

  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = hostTargetMachine(error);
  if (!machine)
    return fail(error);
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return fail("LLVM optimisation failed: " + llvm::toString(std::move(err)));

  if (options.emit == "llvm") {
    std::error_code ec;
    llvm::raw_fd_ostream out(options.outputPath, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail("cannot write '" + options.outputPath + "': " + ec.message());
    llvmModule->print(out, nullptr);
    return success();
  }
  if (options.emit == "obj")
    return failed(writeObject(*llvmModule, *machine, options.outputPath, error))
               ? fail(error)
               : success();

  llvm::SmallString<128> object;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("hla-artefact", "o", object))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeObject(object);
  if (failed(writeObject(*llvmModule, *machine, object, error)) ||
      failed(link(object, options.outputPath, options.emit == "shared", error)))
    return fail(error);
  return success();
}
