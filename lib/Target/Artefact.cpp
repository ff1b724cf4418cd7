//===- Artefact.cpp - Compile a model graph to an artefact ------*- C++ -*-===//
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

#include "hla/Dialect/HLA/Transforms/Passes.h"
#include "hla/Target/CUDAKernelSearch.h"

#include "WriteFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace mlir;
using namespace mlir::hla;

/// The directory holding libhla_cpu_runtime*.a: $HLA_RUNTIME_DIR, else
/// found from the binary this code is linked into — libHLACAPI.so sits
/// beside the runtimes (lib/), hla-opt one directory over (bin/ next to
/// lib/), in the build tree and in an install alike. "" when none is there.
static std::string runtimeDirectory() {
  if (const char *env = std::getenv("HLA_RUNTIME_DIR"))
    return env;
  void *address = reinterpret_cast<void *>(&runtimeDirectory);
  Dl_info info;
  if (!dladdr(address, &info) || !info.dli_fname)
    return "";
  // For code in the main program the loader reports argv[0], which may be
  // a bare name found on PATH: ask the system for the executable instead.
  llvm::SmallString<256> self(info.dli_fname);
  if (!llvm::sys::path::is_absolute(self))
    self = llvm::sys::fs::getMainExecutable(nullptr, address);
  llvm::StringRef dir = llvm::sys::path::parent_path(self);
  for (llvm::SmallString<256> candidate :
       {llvm::SmallString<256>(dir),
        llvm::SmallString<256>(llvm::sys::path::parent_path(dir))}) {
    if (candidate != dir)
      llvm::sys::path::append(candidate, "lib");
    llvm::SmallString<256> marker(candidate);
    llvm::sys::path::append(marker, "libhla_cpu_runtime.a");
    if (llvm::sys::fs::exists(marker))
      return std::string(candidate);
  }
  return "";
}

/// The C compiler driver that links artefacts: the first of clang-22,
/// clang and cc on PATH ("" when there is none).
static std::string linkerDriver() {
  for (llvm::StringRef name : {"clang-22", "clang", "cc"})
    if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name))
      return *path;
  return "";
}

/// compiler-rt's builtins archive as `driver` (a clang) reports it, or ""
/// (not clang, or the archive not installed). LLVM lowers an operation the
/// host CPU lacks an instruction for to a builtin routine: f32 -> bf16
/// truncation without AVX512-BF16 calls __truncsfbf2, which libgcc before
/// GCC 13 (Debian 12's) does not define. Asked once per process.
static const std::string &compilerRTBuiltins(llvm::StringRef driver) {
  static const std::string archive = [&]() -> std::string {
    llvm::SmallString<128> printed;
    if (llvm::sys::fs::createTemporaryFile("hla-builtins", "txt", printed))
      return "";
    llvm::FileRemover remover(printed);
    std::optional<llvm::StringRef> redirects[] = {
        std::nullopt, llvm::StringRef(printed), llvm::StringRef("")};
    llvm::StringRef args[] = {driver, "--rtlib=compiler-rt",
                              "-print-libgcc-file-name"};
    if (llvm::sys::ExecuteAndWait(driver, args, std::nullopt, redirects) != 0)
      return "";
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
        llvm::MemoryBuffer::getFile(printed);
    if (!text)
      return "";
    std::string path = (*text)->getBuffer().trim().str();
    return llvm::sys::fs::exists(path) ? path : "";
  }();
  return archive;
}

/// A target machine for the host CPU with all its features (AVX-512 where
/// present), position-independent so that one object serves executables and
/// shared libraries.
static std::unique_ptr<llvm::TargetMachine>
hostTargetMachine(std::string &error) {
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

/// Links `object` into `output` with the C compiler driver, against hla's
/// runtime for `target`.
static LogicalResult link(llvm::StringRef object, llvm::StringRef output,
                          bool shared, llvm::StringRef target,
                          llvm::StringRef runtimeDir, std::string &error) {
  std::string runtimes =
      runtimeDir.empty() ? runtimeDirectory() : runtimeDir.str();
  if (runtimes.empty()) {
    error = "the hla runtime libraries (libhla_cpu_runtime.a) were not found "
            "beside the hla library or in ../lib; set HLA_RUNTIME_DIR";
    return failure();
  }
  llvm::SmallVector<std::string> libraries = {
      runtimes +
      (shared ? "/libhla_cpu_runtime_nomain.a" : "/libhla_cpu_runtime.a")};
  if (target == "cuda")
    libraries.insert(libraries.begin(), runtimes + "/libhla_cuda_runtime.a");
  for (const std::string &library : libraries)
    if (!llvm::sys::fs::exists(library)) {
      error = "the hla runtime library '" + library +
              "' is missing (build it, or set HLA_RUNTIME_DIR)";
      return failure();
    }
  std::string driver = linkerDriver();
  if (driver.empty()) {
    error = "no C compiler driver (clang-22, clang or cc) on PATH to link "
            "the artefact";
    return failure();
  }
  llvm::SmallVector<std::string> args = {driver};
  if (shared)
    args.push_back("-shared");
#ifdef HLA_ARTEFACT_LINK_FLAGS
  // A sanitized hla (HLA_SANITIZE): its runtimes are instrumented, so the
  // artefact links the sanitizer runtime they call.
  for (llvm::StringRef flag :
       llvm::split(llvm::StringRef(HLA_ARTEFACT_LINK_FLAGS), ' '))
    args.push_back(flag.str());
#endif
  args.push_back(object.str());
  llvm::append_range(args, libraries);
  llvm::append_range(args, llvm::ArrayRef<std::string>{"-o", output.str()});
  if (target == "cuda")
    llvm::append_range(args,
                       llvm::ArrayRef<std::string>{"-ldl", "-lpthread", "-lm"});
  else
    llvm::append_range(
        args, llvm::ArrayRef<std::string>{"-lomp", "-lm", "-lpthread"});
  // Last: it defines only the routines the object and runtimes still need.
  if (const std::string &builtins = compilerRTBuiltins(driver);
      !builtins.empty())
    args.push_back(builtins);
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

/// A timer for one phase of the compile, nested in the caller's scope (a
/// no-op without one).
static TimingScope phase(const ArtefactOptions &options, llvm::StringRef name) {
  return options.timing ? options.timing->nest(name) : TimingScope();
}

/// Runs `pm` on `module` as phase `name`: timed per pass when asked, with
/// the command line's pass-manager options when the caller has them.
static LogicalResult runPhase(PassManager &pm, ModuleOp module,
                              const ArtefactOptions &options,
                              llvm::StringRef name) {
  TimingScope scope = phase(options, name);
  if (options.timing)
    pm.enableTiming(scope);
  if (options.passManagerCLOptions && failed(applyPassManagerCLOptions(pm)))
    return failure();
  return pm.run(module);
}

/// LLVM IR of a lowered module -> -O3 for the host -> the artefact.
static LogicalResult emitHostArtefact(ModuleOp module,
                                      const ArtefactOptions &options,
                                      std::string &error);

static LogicalResult emitHostArtefact(ModuleOp module,
                                      const ArtefactOptions &options,
                                      std::string &error) {
  llvm::LLVMContext llvmContext;
  TimingScope translation = phase(options, "translation to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "hla");
  translation.stop();
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine = hostTargetMachine(error);
  if (!machine)
    return failure();
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  TimingScope optimization = phase(options, "LLVM -O3");
  if (llvm::Error err = optimize(llvmModule.get())) {
    error = "LLVM optimisation failed: " + llvm::toString(std::move(err));
    return failure();
  }
  optimization.stop();

  if (options.emit == "llvm") {
    std::error_code ec;
    llvm::raw_fd_ostream out(options.outputPath, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      error = "cannot write '" + options.outputPath + "': " + ec.message();
      return failure();
    }
    llvmModule->print(out, nullptr);
    return success();
  }
  TimingScope codegen = phase(options, "LLVM code generation");
  if (options.emit == "obj")
    return writeObject(*llvmModule, *machine, options.outputPath, error);

  llvm::SmallString<128> object;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("hla-artefact", "o", object)) {
    error = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  llvm::FileRemover removeObject(object);
  if (failed(writeObject(*llvmModule, *machine, object, error)))
    return failure();
  codegen.stop();
  TimingScope linking = phase(options, "link");
  return link(object, options.outputPath, options.emit == "shared",
              options.target, options.runtimeDirectory, error);
}

LogicalResult mlir::hla::compileToArtefact(ModuleOp module,
                                           const ArtefactOptions &options) {
  auto fail = [&](const llvm::Twine &message) {
    return module.emitError() << "hla-opt: " << message;
  };
  bool cuda = options.target == "cuda";
  if (options.target != "cpu" && !cuda)
    return fail("--hla-target=" + options.target +
                " is not supported (targets: cpu, cuda)");
  llvm::SmallVector<llvm::StringRef> kinds = {"llvm", "obj", "shared", "exe"};
  if (cuda)
    llvm::append_range(kinds, llvm::ArrayRef<llvm::StringRef>{"ptx", "cubin"});
  if (!llvm::is_contained(kinds, options.emit))
    return fail("--emit=" + options.emit +
                " is not supported for --hla-target=" + options.target + " (" +
                llvm::join(kinds, ", ") + ")");
  if (options.outputPath.empty() || options.outputPath == "-")
    return fail("--emit=" + options.emit + " needs an output file (-o)");

  std::string error;
  if (options.vjp) {
    PassManager pm(module.getContext());
    pm.addPass(createHLADeriveVjpPass(HLADeriveVjpPassOptions{options.entry}));
    if (failed(runPhase(pm, module, options, "hla-derive-vjp")))
      return failure();
  }
  if (options.summaryEntries) {
    if (options.vjp)
      return fail("--summary-entries and --vjp cannot be combined (the "
                  "backward has no summary entries yet)");
    PassManager pm(module.getContext());
    pm.addPass(createHLAAddSummaryEntriesPass(
        HLAAddSummaryEntriesPassOptions{options.entry}));
    if (failed(runPhase(pm, module, options, "hla-add-summary-entries")))
      return failure();
  }
  if (!cuda) {
    // The target pipeline, down to the LLVM dialect with the artefact ABI.
    CPUPipelineOptions pipeline;
    pipeline.chunkSize = options.chunkSize ? options.chunkSize : 64;
    pipeline.chunkForm = options.chunkForm;
    pipeline.segments = options.segments;
    pipeline.valueTile = options.valueTile;
    pipeline.stableFeatures = options.stableFeatures;
    pipeline.anchorRows =
        options.anchorRows ? options.anchorRows : kDefaultAnchorRows;
    pipeline.causalIsolation = options.causalIsolation;
    pipeline.parallelGradients = options.parallelGradients;
    pipeline.splitGradients = options.splitGradients;
    pipeline.bf16Products = options.bf16Products;
    pipeline.hoistChunkWork = options.hoistChunkWork;
    pipeline.fissionLiveBytes = options.fissionLiveBytes;
    pipeline.scanSchedule = options.scanSchedule;
    pipeline.scanThreads = options.scanThreads;
    pipeline.vectorize = options.vectorize;
    if (options.emit == "exe")
      pipeline.entry = options.entry;
    PassManager pm(module.getContext());
    buildCPUPipeline(pm, pipeline);
    if (failed(runPhase(pm, module, options, "hla-cpu-pipeline")))
      return failure();
    if (failed(emitHostArtefact(module, options, error)))
      return fail(error);
    return success();
  }

  // CUDA: the kernels (hla-cuda-kernels: the options left automatic
  // decided by trial, ptxas's verdict included), then the host code.
  if (options.cudaMma == MmaInstruction::Wgmma && options.cudaChip != "sm_90a")
    return fail("--cuda-mma=wgmma needs --cuda-chip=sm_90a (got " +
                options.cudaChip + ")");
  CUDAPipelineOptions requested;
  requested.chunkSize = options.chunkSize; // 0: the search's
  requested.schedule = options.cudaSchedule;
  requested.segments = options.segments;
  requested.valueTile = options.valueTile;
  requested.chip = options.cudaChip;
  requested.features = options.cudaFeatures;
  requested.mma = options.cudaMma;
  requested.generator = options.cudaGenerator;
  requested.parallelGradients = options.parallelGradients;
  requested.splitGradients = options.splitGradients;
  requested.bf16Products = options.bf16Products;
  requested.hoistChunkWork = options.hoistChunkWork;
  requested.fissionLiveBytes = options.fissionLiveBytes;
  requested.warpgroups = options.cudaWarpgroups;
  requested.causalIsolation = options.causalIsolation;
  requested.stableFeatures = options.stableFeatures;
  requested.anchorRows = options.anchorRows;
  requested.blockThreads = options.cudaThreads;
  requested.toolkit = resolveCUDAToolkit(options.cudaToolkit);
  if (options.emit == "exe")
    requested.entry = options.entry;
  // Kernels index with 32-bit integers unless a tensor is too large for it.
  int64_t largest = 0;
  module.walk([&](func::FuncOp func) {
    for (Type type : func.getFunctionType().getInputs())
      if (auto tensor = dyn_cast<RankedTensorType>(type))
        if (tensor.hasStaticShape())
          largest = std::max(largest, tensor.getNumElements());
    for (Type type : func.getFunctionType().getResults())
      if (auto tensor = dyn_cast<RankedTensorType>(type))
        if (tensor.hasStaticShape())
          largest = std::max(largest, tensor.getNumElements());
  });
  requested.indexBitwidth = largest < (int64_t(1) << 31) ? 32 : 64;
  {
    CUDAKernelSearchSettings settings;
    // --emit=ptx writes the PTX as generated, before ptxas judges it.
    settings.assemble = options.emit != "ptx";
    settings.ptxasLog = options.ptxasLog;
    settings.allowSpills = options.cudaAllowSpills;
    TimingScope search = phase(options, "hla-cuda-kernels");
    settings.timing = options.timing ? &search : nullptr;
    PassManager pm(module.getContext());
    pm.addPass(createCUDAKernelSearchPass(requested, settings));
    if (options.passManagerCLOptions && failed(applyPassManagerCLOptions(pm)))
      return failure();
    if (failed(pm.run(module)))
      return failure();
  }
  // The search's decision, recorded on the module: for hla-opt, reported.
  auto decidedText = module->getAttrOfType<StringAttr>("hla.cuda_options");
  if (options.reportCUDAOptions) {
    module.emitRemark() << "hla.cuda_options = \"" << decidedText.getValue()
                        << "\"";
    // And how hla-chunk cut each chain (forms, value tiles, passes).
    if (auto chunking = module->getAttrOfType<ArrayAttr>("hla.chunking"))
      module.emitRemark() << "hla.chunking = " << chunking;
  }
  if (options.emit == "ptx" || options.emit == "cubin") {
    llvm::SmallVector<std::pair<std::string, llvm::StringRef>> texts;
    module.walk([&](gpu::BinaryOp binary) {
      for (Attribute attr : binary.getObjects())
        texts.push_back({binary.getName().str(),
                         cast<gpu::ObjectAttr>(attr).getObject().getValue()});
    });
    if (texts.empty())
      return fail("the graph has no kernel to write as --emit=" + options.emit);
    // One kernel module: the file named by -o. Several: one file each, the
    // module's name before -o's extension (k.ptx -> k.main_kernel.ptx).
    for (auto &[name, text] : texts) {
      std::string path = options.outputPath;
      if (texts.size() > 1) {
        llvm::SmallString<256> file(options.outputPath);
        std::string extension = llvm::sys::path::extension(file).str();
        llvm::sys::path::replace_extension(file, "." + name + extension);
        path = std::string(file);
      }
      if (failed(writeFile(path, text, error)))
        return fail(error);
    }
    return success();
  }
  auto pipeline = CUDAPipelineOptions::createFromString(decidedText.getValue());
  if (!pipeline)
    return fail("the recorded hla.cuda_options do not parse: " +
                decidedText.getValue());
  PassManager host(module.getContext());
  buildCUDAHostPipeline(host, *pipeline);
  if (failed(runPhase(host, module, options, "CUDA host pipeline")))
    return failure();
  if (failed(emitHostArtefact(module, options, error)))
    return fail(error);
  return success();
}
