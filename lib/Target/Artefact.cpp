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
  args.push_back(object.str());
  llvm::append_range(args, libraries);
  llvm::append_range(args, llvm::ArrayRef<std::string>{"-o", output.str()});
  if (target == "cuda")
    llvm::append_range(args,
                       llvm::ArrayRef<std::string>{"-ldl", "-lpthread", "-lm"});
  else
    llvm::append_range(
        args, llvm::ArrayRef<std::string>{"-lomp", "-lm", "-lpthread"});
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

static LogicalResult writeFile(llvm::StringRef path, llvm::StringRef data,
                               std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  out << data;
  return success();
}

/// The widest value dimension of the graph's attention ops (their one
/// result is [B, T, H, dv]), 0 for none.
static int64_t valueWidth(ModuleOp module) {
  int64_t width = 0;
  module.walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "hla" &&
        op->getNumResults() == 1)
      if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
        if (type.getRank() == 4 && !type.isDynamicDim(3))
          width = std::max(width, type.getDimSize(3));
  });
  return width;
}

/// The value tile after `current` in the register-tile ladder: half the
/// width, then halves down to 16 columns (0 when there is none).
static int64_t narrowerValueTile(int64_t current, int64_t width) {
  int64_t from = current > 0 ? current : width;
  if (from <= 16)
    return 0;
  return std::max<int64_t>(from / 2, 16);
}

/// The bytes of spill stores plus spill loads ptxas -v reports in `log`
/// ("... N bytes spill stores, M bytes spill loads" per function).
static int64_t spilledBytes(llvm::StringRef log) {
  int64_t total = 0;
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines)
    for (llvm::StringRef what : {" bytes spill stores", " bytes spill loads"}) {
      size_t at = line.find(what);
      if (at == llvm::StringRef::npos)
        continue;
      llvm::StringRef before = line.take_front(at).rtrim();
      int64_t bytes = 0;
      if (!before.substr(before.find_last_of(' ') + 1).getAsInteger(10, bytes))
        total += bytes;
    }
  return total;
}

/// Assembles every kernel module's PTX with ptxas (-v), keeping the log at
/// `logPath`, and replaces the PTX objects with the cubins. Fails on
/// register spills (their bytes, from ptxas's -v numbers, in `spills`;
/// unless `allowSpills`) and on ptxas's warnings that wgmma was serialized
/// (C7510, C7511, C7515).
/// `ptx` receives the PTX of every module.
static LogicalResult assembleKernels(ModuleOp module,
                                     const CUDAPipelineOptions &cuda,
                                     llvm::StringRef logPath,
                                     llvm::SmallVectorImpl<std::string> &ptx,
                                     llvm::SmallVectorImpl<std::string> &cubins,
                                     int64_t &spills, std::string &error,
                                     bool allowSpills = false) {
  spills = 0;
  std::string ptxas = cuda.toolkit + "/bin/ptxas";
  if (!llvm::sys::fs::can_execute(ptxas)) {
    error = "ptxas not found at '" + ptxas +
            "' (set the CUDA toolkit with --cuda-toolkit)";
    return failure();
  }
  std::string log;
  llvm::SmallVector<gpu::BinaryOp> binaries;
  module.walk([&](gpu::BinaryOp op) { binaries.push_back(op); });
  for (gpu::BinaryOp binary : binaries) {
    llvm::SmallVector<Attribute> objects;
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      if (object.getFormat() != gpu::CompilationTarget::Assembly) {
        error = "kernel module '" + binary.getName().str() +
                "' was not compiled to PTX";
        return failure();
      }
      llvm::StringRef text = object.getObject().getValue();
      ptx.push_back(text.str());
      llvm::SmallString<128> ptxPath, cubinPath, logFile;
      if (llvm::sys::fs::createTemporaryFile("hla-kernel", "ptx", ptxPath) ||
          llvm::sys::fs::createTemporaryFile("hla-kernel", "cubin",
                                             cubinPath) ||
          llvm::sys::fs::createTemporaryFile("hla-ptxas", "log", logFile)) {
        error = "cannot create temporary files for ptxas";
        return failure();
      }
      llvm::FileRemover removePtx(ptxPath), removeCubin(cubinPath),
          removeLog(logFile);
      if (failed(writeFile(ptxPath, text, error)))
        return failure();
      std::string arch = "-arch=" + cuda.chip.getValue();
      llvm::SmallVector<llvm::StringRef> args = {ptxas,   arch, "-v",     "-O3",
                                                 ptxPath, "-o", cubinPath};
      std::optional<llvm::StringRef> redirects[] = {std::nullopt, logFile.str(),
                                                    logFile.str()};
      std::string message;
      int status = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt,
                                             redirects, 0, 0, &message);
      auto logText = llvm::MemoryBuffer::getFile(logFile);
      std::string moduleLog =
          logText ? (*logText)->getBuffer().str() : std::string();
      log += "// kernel module " + binary.getName().str() + "\n" + moduleLog;
      if (status != 0) {
        error = "ptxas failed on kernel module '" + binary.getName().str() +
                "':\n" + moduleLog + message;
        return failure();
      }
      for (llvm::StringRef code : {"C7510", "C7511", "C7515"})
        if (llvm::StringRef(moduleLog).contains(code)) {
          error = "ptxas serialized wgmma in kernel module '" +
                  binary.getName().str() + "' (" + code.str() + "):\n" +
                  moduleLog;
          return failure();
        }
      spills = spilledBytes(moduleLog);
      if (spills && !allowSpills) {
        error = "registers spill in kernel module '" + binary.getName().str() +
                "' (" + std::to_string(spills) + " bytes):\n" + moduleLog;
        return failure();
      }
      auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
      if (!cubin) {
        error = "ptxas wrote no cubin for '" + binary.getName().str() + "'";
        return failure();
      }
      cubins.push_back((*cubin)->getBuffer().str());
      objects.push_back(gpu::ObjectAttr::get(
          module.getContext(), object.getTarget(),
          gpu::CompilationTarget::Binary,
          StringAttr::get(module.getContext(), cubins.back()),
          object.getProperties(), object.getKernels()));
    }
    binary.setObjectsAttr(ArrayAttr::get(module.getContext(), objects));
  }
  if (!logPath.empty() && failed(writeFile(logPath, log, error)))
    return failure();
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
  if (!cuda) {
    // The target pipeline, down to the LLVM dialect with the artefact ABI.
    CPUPipelineOptions pipeline;
    pipeline.chunkSize = options.chunkSize ? options.chunkSize : 64;
    pipeline.chunkForm = options.chunkForm;
    pipeline.segments = options.segments;
    pipeline.valueTile = options.valueTile;
    pipeline.stableFeatures = options.stableFeatures;
    pipeline.causalIsolation = options.causalIsolation;
    pipeline.schedule = options.schedule;
    pipeline.threads = options.threads;
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

  // CUDA: kernels to PTX, ptxas to cubins (its log kept next to the
  // artefact), then the host code.
  if (!llvm::is_contained({"auto", "persistent", "segmented"},
                          llvm::StringRef(options.schedule)))
    return fail("--schedule=" + options.schedule +
                " is not a schedule of --hla-target=cuda (auto, persistent, "
                "segmented)");
  CUDAPipelineOptions pipeline;
  pipeline.chunkSize = options.chunkSize ? options.chunkSize : 32;
  pipeline.schedule = options.schedule;
  pipeline.segments = options.segments;
  pipeline.valueTile = options.valueTile;
  pipeline.chip = options.cudaChip;
  pipeline.features = options.cudaFeatures;
  if (!llvm::is_contained({"auto", "wgmma", "mma.sync"},
                          llvm::StringRef(options.cudaMma)))
    return fail("--cuda-mma=" + options.cudaMma +
                " is not a tensor-core instruction (auto, wgmma, mma.sync)");
  if (options.cudaMma == "wgmma" && options.cudaChip != "sm_90a")
    return fail("--cuda-mma=wgmma needs --cuda-chip=sm_90a (got " +
                options.cudaChip + ")");
  pipeline.mma = options.cudaMma;
  pipeline.generator = options.cudaGenerator;
  pipeline.warpgroups = options.cudaWarpgroups;
  pipeline.causalIsolation = options.causalIsolation;
  pipeline.threads = options.cudaThreads;
  pipeline.toolkit = resolveCUDAToolkit(options.cudaToolkit);
  if (options.emit == "exe")
    pipeline.entry = options.entry;
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
  pipeline.indexBitwidth = largest < (int64_t(1) << 31) ? 32 : 64;
  // Device code for `pipeline` into `module`.
  // The value width the register-tile value tiles halve.
  int64_t width = valueWidth(module);
  auto buildDevice = [&](CUDAPipelineOptions &pipeline) -> LogicalResult {
    // The auto schedule is the segmented one where it helps (few sequence-
    // head pairs) and its kernels fit in shared memory: tried on a copy,
    // quietly, falling back to the persistent schedule (whose diagnostics are
    // then the real ones). Kernels that stream state through device-memory
    // scratch lose more in the segmented schedule's two passes than its
    // extra blocks gain (measured on an H200: 56 vs 24 ms at hla2
    // 4x16x8192x128), so those take the persistent schedule too.
    // wgmma's staging buffers can be what pushes the segmented kernels into
    // scratch; they are then tried with mma.sync (which stages nothing)
    // before the persistent schedule (1x16x65536x64, chunk 64: 10.8 ms
    // segmented with mma.sync, 43.9 ms persistent with wgmma).
    bool compiled = false;
    // Register tiles first, at their 64-token chunks and one warpgroup per
    // (sequence, head, value tile), when every chunk loop fits them.
    if (pipeline.generator == "auto" && !options.chunkSize &&
        pipeline.chip == "sm_90a") {
      TimingScope search = phase(options, "CUDA register-tile trial");
      std::string schedule = pipeline.schedule;
      int64_t chunk = pipeline.chunkSize;
      pipeline.generator = "tiles";
      if (schedule == "auto")
        pipeline.schedule = "persistent";
      pipeline.chunkSize = 64;
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      // One warpgroup per (sequence, head, value tile) leaves the GPU idle
      // when there are few: 1x16x65536x64 linear attention ran 4.9 ms on
      // 32 blocks, 1.95 ms segmented on the phases (H200, 2026-12-02).
      // Such graphs take the segmented form on register tiles, else the
      // search below.
      auto fewBlocks = [&](ModuleOp built) {
        bool few = false;
        built.walk([&](gpu::LaunchFuncOp launch) {
          std::optional<int64_t> blocks =
              getConstantIntValue(launch.getGridSizeX());
          few |= blocks && *blocks < pipeline.sms / 2;
        });
        return few;
      };
      OwningOpRef<ModuleOp> trial;
      auto tryTiles = [&]() {
        trial = module.clone();
        PassManager device(module.getContext());
        buildCUDADevicePipeline(device, pipeline);
        return succeeded(device.run(*trial));
      };
      bool placed = tryTiles();
      // A loop whose copies overflow shared memory at full value width may
      // fit at half of it (hla3 at d = 64: 332 KB at 64 columns; hla2 at
      // d = 128: 266 KB at 128).
      if (!placed && options.valueTile == -1 &&
          pipeline.schedule == "persistent" && narrowerValueTile(0, width)) {
        pipeline.valueTile = narrowerValueTile(0, width);
        placed = tryTiles();
        if (!placed)
          pipeline.valueTile = options.valueTile;
      }
      if (placed && fewBlocks(*trial) && schedule == "auto") {
        // Runs of chunks per (sequence, head) in parallel, their states
        // combined (the segment count from the SMs; no value tiles).
        pipeline.schedule = "segmented";
        pipeline.valueTile = options.valueTile;
        placed = tryTiles();
      }
      // The segmented form's run count weighs blocks against the runs'
      // sequential work (hla-chunk's model): its blocks are not held to
      // half the SMs.
      if (placed && (pipeline.schedule == "segmented" || !fewBlocks(*trial))) {
        module.getBodyRegion().takeBody(trial->getBodyRegion());
        module->setAttrs(trial.get()->getAttrDictionary());
        compiled = true;
      } else {
        pipeline.valueTile = options.valueTile;
        pipeline.generator = "phases";
        pipeline.schedule = schedule;
        pipeline.chunkSize = chunk;
      }
    }
    if (!compiled && pipeline.schedule == "auto") {
      TimingScope search = phase(options, "CUDA schedule search");
      llvm::SmallVector<std::string, 2> instructions = {pipeline.mma};
      if (pipeline.mma == "auto" && pipeline.chip == "sm_90a")
        instructions.push_back("mma.sync");
      std::string chosen = pipeline.mma;
      for (const std::string &mma : instructions) {
        OwningOpRef<ModuleOp> trial = module.clone();
        pipeline.mma = mma;
        PassManager device(module.getContext());
        buildCUDADevicePipeline(device, pipeline);
        ScopedDiagnosticHandler quiet(module.getContext(),
                                      [](Diagnostic &) { return success(); });
        bool scratch = false;
        bool built = succeeded(device.run(*trial));
        if (built)
          trial->walk([&](func::FuncOp func) {
            scratch |= func->hasAttr("hla.device_scratch");
          });
        if (built && !scratch) {
          module.getBodyRegion().takeBody(trial->getBodyRegion());
          module->setAttrs(trial.get()->getAttrDictionary());
          compiled = true;
          break;
        }
      }
      if (!compiled) {
        pipeline.schedule = "persistent";
        pipeline.mma = chosen;
      }
    }
    if (!compiled) {
      PassManager device(module.getContext());
      buildCUDADevicePipeline(device, pipeline);
      if (failed(runPhase(device, module, options, "CUDA device pipeline")))
        return failure();
    }
    return success();
  };
  // TMA loads keep their tensor maps and mbarriers in registers; in
  // kernels already at the register limit (hla2 at d = 128) that spills,
  // and ptxas's verdict (assembleKernels fails on spills) sends them back
  // to the threads' copies.
  OwningOpRef<ModuleOp> pristine = module.clone();
  std::string requestedSchedule = pipeline.schedule,
              requestedMma = pipeline.mma,
              requestedGenerator = pipeline.generator;
  int64_t requestedChunk = pipeline.chunkSize;
  if (failed(buildDevice(pipeline)))
    return failure();
  // The prefetched tiles' second buffers can push a kernel's buffers into
  // device-memory scratch, which costs more than the prefetch gains
  // (H200, hla2 8x16x8192x64 with 64-token chunks: 6.48 ms with, 5.59
  // without): such kernels are rebuilt without it.
  bool scratch = false;
  module.walk([&](func::FuncOp func) {
    scratch |= func->hasAttr("hla.device_scratch");
  });
  if (scratch && pipeline.tmaPrefetch == "auto") {
    OwningOpRef<ModuleOp> copy = pristine->clone();
    module.getBodyRegion().takeBody(copy->getBodyRegion());
    module->setAttrs(copy.get()->getAttrDictionary());
    pipeline.tmaPrefetch = "off";
    pipeline.schedule = requestedSchedule;
    pipeline.mma = requestedMma;
    if (failed(buildDevice(pipeline)))
      return failure();
  }
  llvm::SmallVector<std::string> ptx, cubins;
  int64_t spills = 0;
  // The widest register-tile kernels ptxas spilled, kept for when the
  // shared-memory phases would stream their state through device memory.
  struct TileChoice {
    int64_t chunkSize, valueTile, warpgroups;
  };
  std::optional<TileChoice> spillingTiles;
  bool allowSpills = false;
  if (options.emit == "ptx") {
    // The PTX as generated, before ptxas judges it (for inspection).
    module.walk([&](gpu::BinaryOp binary) {
      for (Attribute attr : binary.getObjects())
        ptx.push_back(cast<gpu::ObjectAttr>(attr).getObject().getValue().str());
    });
  } else {
    TimingScope assembly = phase(options, "ptxas");
    while (failed(assembleKernels(module, pipeline, options.ptxasLog, ptx,
                                  cubins, spills, error, allowSpills))) {
      // Kernels ptxas refuses (spills): register tiles (chosen by the
      // search, or placed where they could be) go back to the shared-memory
      // phases first; then TMA's registers are given up.
      bool tiles =
          pipeline.generator == "auto" ||
          (pipeline.generator == "tiles" && requestedGenerator == "auto");
      if (!tiles && (pipeline.tma != "auto" || spills == 0)) {
        // The last resort of an automatic choice: the phases as they are,
        // spilling (hla3's derived backward at d = 64 spills 588 bytes per
        // thread; no narrower form exists for it). Options the caller
        // fixed still fail on spills.
        if (spills == 0 || requestedGenerator != "auto" || allowSpills)
          return fail(error);
        allowSpills = true;
        ptx.clear();
        cubins.clear();
        error.clear();
        continue;
      }
      // Register-tile kernels of one warpgroup per block.
      bool oneWarpgroup = false;
      module.walk([&](gpu::LaunchFuncOp launch) {
        std::optional<int64_t> threads =
            getConstantIntValue(launch.getBlockSizeX());
        oneWarpgroup |= threads == 128;
      });
      OwningOpRef<ModuleOp> copy = pristine->clone();
      module.getBodyRegion().takeBody(copy->getBodyRegion());
      module->setAttrs(copy.get()->getAttrDictionary());
      pipeline.schedule = requestedSchedule;
      pipeline.mma = requestedMma;
      if (tiles && pipeline.generator == "tiles" && oneWarpgroup &&
          options.cudaWarpgroups == 0 && pipeline.warpgroups == 0) {
        // Two warpgroups first, each with half of every fragment's
        // columns, at the same value tiles: linear attention at d = 128
        // with causal isolation spills 40 bytes in one warpgroup at 64
        // columns, which 32-column tiles would double the blocks for.
        pipeline.warpgroups = 2;
      } else if (tiles && options.valueTile == -1 &&
                 narrowerValueTile(pipeline.valueTile, width)) {
        // Then narrower value tiles: fewer registers for the value-wide
        // state and outputs (hla3 at 2x16x32768 fits at 32 columns).
        if (!spillingTiles && pipeline.generator == "tiles")
          spillingTiles = TileChoice{pipeline.chunkSize, pipeline.valueTile,
                                     pipeline.warpgroups};
        pipeline.generator = "tiles";
        pipeline.schedule = "persistent";
        pipeline.valueTile = narrowerValueTile(pipeline.valueTile, width);
        pipeline.warpgroups = options.cudaWarpgroups;
      } else if (tiles) {
        pipeline.generator = "phases";
        pipeline.chunkSize = requestedChunk;
        pipeline.valueTile = options.valueTile;
        pipeline.warpgroups = options.cudaWarpgroups;
      } else {
        pipeline.tma = "off";
      }
      ptx.clear();
      cubins.clear();
      error.clear();
      if (failed(buildDevice(pipeline)))
        return failure();
      // Phases that stream their state through device memory (hla2 at
      // d = 128) lose to register tiles that spill a few hundred bytes per
      // thread to local memory, which stays in L1: on an H200 hla2
      // 8x16x2048x128 ran 5.58 ms on the phases, 0.80 ms on 64-column tiles
      // spilling 1,584 bytes, 1.12 ms on 32-column ones spilling 756
      // (bench/RESULTS.md). The widest spilling tiles are kept then.
      bool phasesScratch = false;
      module.walk([&](func::FuncOp func) {
        phasesScratch |= func->hasAttr("hla.device_scratch");
      });
      if (pipeline.generator == "phases" && phasesScratch && spillingTiles) {
        OwningOpRef<ModuleOp> again = pristine->clone();
        module.getBodyRegion().takeBody(again->getBodyRegion());
        module->setAttrs(again.get()->getAttrDictionary());
        pipeline.generator = "tiles";
        pipeline.schedule = "persistent";
        pipeline.chunkSize = spillingTiles->chunkSize;
        pipeline.valueTile = spillingTiles->valueTile;
        pipeline.warpgroups = spillingTiles->warpgroups;
        spillingTiles.reset();
        allowSpills = true;
        if (failed(buildDevice(pipeline)))
          return failure();
      }
    }
  }
  // The search's decision: the device pipeline with exactly these options
  // (hla-opt --hla-cuda-pipeline="...") rebuilds these kernels. Recorded on
  // the module and, for hla-opt, reported.
  if (pipeline.schedule == "auto")
    pipeline.schedule = "segmented"; // what auto is, once the search kept it
  std::string decided;
  llvm::raw_string_ostream decidedStream(decided);
  pipeline.print(decidedStream);
  decided = llvm::StringRef(decided).trim().trim("{}").str();
  module->setAttr("hla.cuda_options",
                  StringAttr::get(module.getContext(), decided));
  if (options.reportCUDAOptions)
    module.emitRemark() << "hla.cuda_options = \"" << decided << "\"";
  if (options.emit == "ptx" || options.emit == "cubin") {
    llvm::SmallVectorImpl<std::string> &texts =
        options.emit == "ptx" ? ptx : cubins;
    llvm::SmallVector<std::string> names;
    module.walk(
        [&](gpu::BinaryOp binary) { names.push_back(binary.getName().str()); });
    if (texts.empty() || texts.size() != names.size())
      return fail("the graph has no kernel to write as --emit=" + options.emit);
    // One kernel module: the file named by -o. Several: one file each, the
    // module's name before -o's extension (k.ptx -> k.main_kernel.ptx).
    for (auto [text, name] : llvm::zip(texts, names)) {
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
  PassManager host(module.getContext());
  buildCUDAHostPipeline(host, pipeline);
  if (failed(runPhase(host, module, options, "CUDA host pipeline")))
    return failure();
  if (failed(emitHostArtefact(module, options, error)))
    return fail(error);
  return success();
}
