//===- CUDAKernelSearch.cpp - Kernels of the options that fit ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-cuda-kernels: the device half of hla-cuda-pipeline, run on copies of
// the module with the options left to it tried in turn, ptxas (-v) judging
// each set of kernels, until one fits; the options it settles on are
// recorded on the module (hla.cuda_options). What each step of the ladder
// buys was measured on an H200; the comments give the figures.
//
//===----------------------------------------------------------------------===//

#include "hla/Target/CUDAKernelSearch.h"

#include "WriteFile.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
using namespace mlir::hla;

/// Whether the graph has a LinSimp op.
static bool hasLinSimp(ModuleOp module) {
  bool found = false;
  module.walk([&](LinSimpOp) { found = true; });
  return found;
}

/// Whether the graph is a derived backward (hla-derive-vjp's
/// hla.prefix_vjp).
static bool hasPrefixVjp(ModuleOp module) {
  bool found = false;
  module.walk([&](PrefixVjpOp) { found = true; });
  return found;
}

/// Folds the (sequence, head) pairs of `tokens`, a [B, T, H, width] tensor
/// (B · H; none where B or H is dynamic), into `pairs`, the fewest so far
/// (0: none yet); `width` 0 takes any.
static void keepFewestPairs(Value tokens, int64_t width, int64_t &pairs) {
  auto type = dyn_cast<RankedTensorType>(tokens.getType());
  if (!type || type.getRank() != 4 || type.isDynamicDim(0) ||
      type.isDynamicDim(2) || (width && type.getDimSize(3) != width))
    return;
  int64_t here = type.getDimSize(0) * type.getDimSize(2);
  pairs = pairs ? std::min(pairs, here) : here;
}

/// The fewest (sequence, head) pairs of the graph's KDA ops (of their
/// [B, T, H, dv] result), 0 for none.
static int64_t kdaSequenceHeads(ModuleOp module) {
  int64_t pairs = 0;
  module.walk(
      [&](KDAOp op) { keepFewestPairs(op->getResult(0), /*width=*/0, pairs); });
  return pairs;
}

/// The fewest (sequence, head) pairs of the graph's derived backwards of
/// KDA at d = 64 (hla.prefix_vjp of the "kda" monoid; of the query's
/// gradient, its first result, [B, T, H, 64]), 0 for none.
static int64_t kdaBackwardSequenceHeads(ModuleOp module) {
  int64_t pairs = 0;
  module.walk([&](PrefixVjpOp op) {
    if (op.getMonoid().getSpec().name == "kda")
      keepFewestPairs(op->getResult(0), /*width=*/64, pairs);
  });
  return pairs;
}

/// The widest value dimension of the graph's attention ops (their one
/// result is [B, T, H, dv]), 0 for none and for graphs with a LinSimp op,
/// whose anchor window hla-chunk does not cut by value columns.
static int64_t valueWidth(ModuleOp module) {
  if (hasLinSimp(module))
    return 0;
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
static LogicalResult assembleKernels(ModuleOp module,
                                     const CUDAPipelineOptions &cuda,
                                     llvm::StringRef logPath, int64_t &spills,
                                     std::string &error, bool allowSpills) {
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
  // Every module's cubins, set only once all of them assembled: a module
  // that fails leaves the others' PTX in place for the search's next try
  // (a derived backward has a kernel per pass over the chunks).
  llvm::SmallVector<ArrayAttr> assembled;
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
      int64_t moduleSpills = spilledBytes(moduleLog);
      spills += moduleSpills;
      if (moduleSpills && !allowSpills) {
        error = "registers spill in kernel module '" + binary.getName().str() +
                "' (" + std::to_string(moduleSpills) + " bytes):\n" + moduleLog;
        return failure();
      }
      auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
      if (!cubin) {
        error = "ptxas wrote no cubin for '" + binary.getName().str() + "'";
        return failure();
      }
      objects.push_back(gpu::ObjectAttr::get(
          module.getContext(), object.getTarget(),
          gpu::CompilationTarget::Binary,
          StringAttr::get(module.getContext(), (*cubin)->getBuffer()),
          object.getProperties(), object.getKernels()));
    }
    assembled.push_back(ArrayAttr::get(module.getContext(), objects));
  }
  for (auto [binary, objects] : llvm::zip_equal(binaries, assembled))
    binary.setObjectsAttr(objects);
  if (!logPath.empty() && failed(writeFile(logPath, log, error)))
    return failure();
  return success();
}

/// Live bytes a stage of KDA's gradients' pass holds at most (see
/// tryRegisterTiles).
static constexpr int64_t kKdaGradientStageBytes = 96 * 1024;

namespace {

/// One run of the search over one module.
class KernelSearch {
public:
  KernelSearch(ModuleOp module, const CUDAPipelineOptions &requested,
               const CUDAKernelSearchSettings &settings)
      : module(module), settings(settings), pristine(module.clone()),
        width(valueWidth(module)), linSimp(hasLinSimp(module)) {
    this->requested.copyOptionValuesFrom(requested);
    pipeline.copyOptionValuesFrom(requested);
    choosesGradients =
        requested.parallelGradients == AutoSwitch::Auto && hasPrefixVjp(module);
    // A derived backward's value tiles (its sequential passes per value
    // tile, hla-chunk's value-tile) are taken only where asked for: they
    // lost to whole rows at every shape measured, and to runs where blocks
    // are few (linear attention 1x16x65536x64 backward: 3.26 ms at 16
    // columns, 1.52 in runs; 8x16x2048: 0.346 against 0.307; H200,
    // 2026-12-05).
    if (hasPrefixVjp(module) && requested.valueTile == -1) {
      this->requested.valueTile = 0;
      pipeline.valueTile = 0;
    }
    // Nor is a derived backward's state-free work moved out of its loops
    // unless asked for (hla3's reverse pass would be: not measured yet).
    choosesBackwardForm = hasPrefixVjp(module) &&
                          requested.hoistChunkWork == AutoSwitch::Auto &&
                          requested.fissionLiveBytes == 0;
    if (hasPrefixVjp(module) && requested.hoistChunkWork == AutoSwitch::Auto) {
      this->requested.hoistChunkWork = AutoSwitch::Off;
      pipeline.hoistChunkWork = AutoSwitch::Off;
    }
    pipeline.toolkit = resolveCUDAToolkit(requested.toolkit);
    if (requested.anchorRows == 0)
      pipeline.anchorRows = kDefaultAnchorRows;
  }

  /// Builds the kernels; on success `pipeline` holds the options decided.
  LogicalResult run(std::string &error);

  CUDAPipelineOptions pipeline;

private:
  TimingScope phase(llvm::StringRef name) {
    return settings.timing ? settings.timing->nest(name) : TimingScope();
  }
  /// Replaces the module's body by a fresh copy of the input.
  void restore() { adopt(pristine->clone()); }
  void adopt(OwningOpRef<ModuleOp> built) {
    module.getBodyRegion().takeBody(built->getBodyRegion());
    module->setAttrs(built.get()->getAttrDictionary());
  }
  /// Whether a kernel of `built` runs on register tiles: blocks of one
  /// warpgroup, 128 threads (the phases' are 256).
  static bool rowsOnTiles(ModuleOp built) {
    bool found = false;
    built.walk([&](gpu::LaunchFuncOp launch) {
      found |= getConstantIntValue(launch.getBlockSizeX()) == 128;
    });
    return found;
  }
  /// Whether `built` (the module by default) streams state through
  /// device-memory scratch.
  bool usesDeviceScratch(ModuleOp built = nullptr) {
    bool scratch = false;
    (built ? built : module).walk([&](func::FuncOp func) {
      scratch |= func->hasAttr("hla.device_scratch");
    });
    return scratch;
  }
  /// Device code for `pipeline` into the module (the schedule's and the
  /// generator's automatic choices made by trial).
  LogicalResult buildDevice();
  bool tryRegisterTiles();
  bool trySegmentedSchedule();
  /// Whether register tiles take every chunk loop, in the persistent
  /// schedule, at `valueTile` columns (a quiet trial mapping; `pipeline` is
  /// left as it was).
  bool tilesPlaceAt(int64_t valueTile) {
    ChunkLoopGenerator generator = pipeline.generator;
    KernelSchedule schedule = pipeline.schedule;
    int64_t tile = pipeline.valueTile, warpgroups = pipeline.warpgroups;
    pipeline.generator = ChunkLoopGenerator::Tiles;
    pipeline.schedule = KernelSchedule::Persistent;
    pipeline.valueTile = valueTile;
    pipeline.warpgroups = requested.warpgroups;
    OwningOpRef<ModuleOp> trial = module.clone();
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    bool placed = succeeded(mapKernels(*trial));
    pipeline.generator = generator;
    pipeline.schedule = schedule;
    pipeline.valueTile = tile;
    pipeline.warpgroups = warpgroups;
    return placed;
  }
  /// Whether the pipeline as it is, but with `count` warpgroups, maps every
  /// kernel (a quiet trial; `pipeline` is left as it was): a loop with row
  /// or column reductions keeps one warpgroup.
  bool mapsWithWarpgroups(int64_t count) {
    int64_t warpgroups = pipeline.warpgroups;
    pipeline.warpgroups = count;
    OwningOpRef<ModuleOp> trial = module.clone();
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    bool mapped = succeeded(mapKernels(*trial));
    pipeline.warpgroups = warpgroups;
    return mapped;
  }
  /// The first half of the device pipeline on a trial: judged on this.
  LogicalResult mapKernels(ModuleOp trial) {
    PassManager mapping(module.getContext());
    buildCUDAKernelMapping(mapping, pipeline);
    return mapping.run(trial);
  }
  /// The second half of the device pipeline on a mapped trial.
  LogicalResult generateKernels(ModuleOp trial) {
    PassManager codegen(module.getContext());
    buildCUDAKernelCodegen(codegen, pipeline);
    return codegen.run(trial);
  }

  ModuleOp module;
  CUDAPipelineOptions requested;
  CUDAKernelSearchSettings settings;
  OwningOpRef<ModuleOp> pristine;
  int64_t width;
  bool linSimp;
  /// A derived backward whose parallel-gradients is left to auto: the
  /// search chooses whether its tokens' gradients get a pass of their own.
  bool choosesGradients = false;
  /// Whether the register tiles kept hoist KDA's state-free work (the
  /// search's choice), measured with the spills of its kernels.
  bool hoisted = false;
  /// A derived backward whose hoisting and fission are left to auto: the
  /// search chooses them for KDA's.
  bool choosesBackwardForm = false;
  /// Whether the kernels kept are KDA's backward with its gradients' pass
  /// cut into stages (the search's choice), measured with the few spills
  /// of its stages.
  bool cutGradients = false;
};

} // namespace

bool KernelSearch::tryRegisterTiles() {
  // Register tiles first, at their 64-token chunks and one warpgroup per
  // (sequence, head, value tile), when every chunk loop fits them.
  TimingScope search = phase("CUDA register-tile trial");
  KernelSchedule schedule = pipeline.schedule;
  int64_t chunk = pipeline.chunkSize;
  pipeline.generator = ChunkLoopGenerator::Tiles;
  if (schedule == KernelSchedule::Auto)
    pipeline.schedule = KernelSchedule::Persistent;
  pipeline.chunkSize = 64;
  if (choosesGradients && pipeline.parallelGradients == AutoSwitch::Auto)
    pipeline.parallelGradients = AutoSwitch::Off;
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  // One warpgroup per (sequence, head, value tile) leaves the GPU idle
  // when there are few: 1x16x65536x64 linear attention ran 4.9 ms on 32
  // blocks, 1.95 ms segmented on the phases (H200, 2026-12-02). Such graphs
  // take the segmented form on register tiles, else the search below.
  // Whether a kernel of `built` has fewer blocks than `limit`.
  auto fewerBlocks = [&](ModuleOp built, int64_t limit) {
    bool few = false;
    built.walk([&](gpu::LaunchFuncOp launch) {
      std::optional<int64_t> blocks =
          getConstantIntValue(launch.getGridSizeX());
      few |= blocks && *blocks < limit;
    });
    return few;
  };
  auto fewBlocks = [&](ModuleOp built) {
    return fewerBlocks(built, pipeline.parallelism / 2);
  };
  OwningOpRef<ModuleOp> trial;
  // Trials are mapped only; the one kept gets its NVVM and PTX below.
  auto tryTiles = [&]() {
    trial = module.clone();
    return succeeded(mapKernels(*trial));
  };
  // KDA's work that the state does not reach (21 of its 25 products per
  // chunk) in a kernel with every chunk in parallel, ahead of a light
  // persistent one (hla-hoist-chunk-work), where its (sequence, head)
  // pairs fill between a quarter and a half of the SMs: 4x16x4096 0.99 ms,
  // against 1.57 in runs and 1.65 fused in 32-column value tiles; with
  // more pairs the fused loop keeps up (8x16x8192: 3.01 against 3.27),
  // with fewer the runs do (1x16x16384: 1.26 against 1.86; H100,
  // 2026-12-06). Its one pass over chunks needs no value tiles.
  hoisted = false;
  if (requested.hoistChunkWork == AutoSwitch::Auto &&
      schedule == KernelSchedule::Auto) {
    int64_t pairs = kdaSequenceHeads(module);
    hoisted = pairs > 0 && 4 * pairs >= pipeline.parallelism &&
              2 * pairs <= pipeline.parallelism;
    pipeline.hoistChunkWork = hoisted ? AutoSwitch::On : AutoSwitch::Off;
    if (hoisted && requested.valueTile == -1)
      pipeline.valueTile = 0;
  }
  // LinSimp's rows (its anchor window, W passes of four products a chunk
  // at one offset a pass) on register tiles in a pass parallel over
  // chunks, its light state (M, a) kept by a persistent loop (on register
  // tiles too; hla-hoist-chunk-work's readout split), where register tiles
  // take the rows (not from an initial state's float32 anchors): 1x16x2048,
  // m = 64, W = 64, 0.558 ms against 2.48 on the phases' segmented form;
  // 1x16x16384, m = 256, 23.8 against 114 (H100, 2026-12-06). The rows'
  // kernel sits at the register limit and may spill a few bytes: allowed,
  // as those numbers were measured so.
  if (linSimp && requested.hoistChunkWork == AutoSwitch::Auto &&
      schedule == KernelSchedule::Auto) {
    pipeline.generator = ChunkLoopGenerator::Auto;
    pipeline.schedule = KernelSchedule::Persistent;
    pipeline.hoistChunkWork = AutoSwitch::On;
    int64_t anchorRows = pipeline.anchorRows;
    if (requested.anchorRows == 0)
      pipeline.anchorRows = pipeline.chunkSize;
    if (tryTiles() && rowsOnTiles(*trial) &&
        succeeded(generateKernels(*trial))) {
      hoisted = true;
      adopt(std::move(trial));
      return true;
    }
    pipeline.hoistChunkWork = requested.hoistChunkWork;
    pipeline.anchorRows = anchorRows;
    pipeline.generator = ChunkLoopGenerator::Phases;
    pipeline.schedule = schedule;
    pipeline.chunkSize = chunk;
    return false;
  }
  // KDA's derived backward: the tokens' gradients in a pass parallel over
  // chunks, cut into stages of at most 96 KiB of live tiles
  // (hla-fission-chunk-passes; as one kernel it needs 776 fragment
  // registers a thread), its sequential passes' state-free work hoisted
  // where the (sequence, head) pairs fill half of the SMs or fewer. Against
  // the phases' two passes: 8x16x2048x64 9.49 ms against 13.41, 8x16x8192
  // 37.2 against 55.9 (not hoisted; hoisted 10.5 and 41.1), 1x16x65536
  // 44.8 against 371 (hoisted; 68.2 not; H100, 2026-12-06). Its stages
  // spill up to 936 bytes, as measured. Only at d = 64 (measured there) and
  // where the tiles take the kernels (16-bit inputs).
  if (int64_t pairs = kdaBackwardSequenceHeads(module);
      pairs > 0 && choosesGradients && choosesBackwardForm &&
      requested.chunkSize == 0 && schedule == KernelSchedule::Auto) {
    // (Auto generator: a stage left without a product, as one chunk's
    // can be once its zero state folds away, runs on the phases.)
    pipeline.generator = ChunkLoopGenerator::Auto;
    pipeline.parallelGradients = AutoSwitch::On;
    pipeline.fissionLiveBytes = kKdaGradientStageBytes;
    hoisted = 2 * pairs <= pipeline.parallelism;
    pipeline.hoistChunkWork = hoisted ? AutoSwitch::On : AutoSwitch::Off;
    if (tryTiles() && rowsOnTiles(*trial) &&
        succeeded(generateKernels(*trial))) {
      cutGradients = true;
      adopt(std::move(trial));
      return true;
    }
    hoisted = false;
    pipeline.generator = ChunkLoopGenerator::Tiles;
    pipeline.hoistChunkWork = AutoSwitch::Off;
    pipeline.fissionLiveBytes = 0;
    pipeline.parallelGradients = AutoSwitch::Off;
  }
  bool placed = tryTiles();
  if (hoisted && !placed) {
    hoisted = false;
    pipeline.hoistChunkWork = AutoSwitch::Off;
    pipeline.valueTile = requested.valueTile;
    placed = tryTiles();
  }
  // Few blocks: runs of chunks per (sequence, head) in parallel, their
  // states combined (hla-chunk's segmented form; the run count from the
  // SMs, no value tiles). A derived backward cuts its sequential passes
  // into runs the same way, which beats a pass of their own for its
  // tokens' gradients: linear attention 1x16x65536x64 backward 1.52 ms in
  // 8 runs against 3.73 with parallel gradients, 4x16x8192x128 1.74 in 2
  // runs against 2.17 in one (H200, 2026-12-05).
  // Where the segmented trial does not place, the persistent one is kept as
  // it was mapped.
  if (placed && !hoisted && fewBlocks(*trial) &&
      schedule == KernelSchedule::Auto) {
    OwningOpRef<ModuleOp> persistent = std::move(trial);
    int64_t persistentValueTile = pipeline.valueTile;
    pipeline.schedule = KernelSchedule::Segmented;
    pipeline.valueTile = requested.valueTile;
    placed = tryTiles();
    if (!placed) {
      pipeline.schedule = KernelSchedule::Persistent;
      pipeline.valueTile = persistentValueTile;
      trial = std::move(persistent);
      placed = true;
    }
  }
  // A derived backward's tokens' gradients in a pass parallel over chunks
  // where its sequential passes, in runs or not, leave most of the GPU idle
  // (fewer blocks than a quarter of the SMs), or where the reverse pass
  // carrying them does not fit the tiles. With 16 blocks (1x16x65536x64
  // linear attention in one run) 3.69 ms against 7.48 with the reverse
  // pass carrying them (H200, 2026-12-04).
  if (choosesGradients && pipeline.parallelGradients == AutoSwitch::Off &&
      (!placed || fewerBlocks(*trial, pipeline.parallelism / 4))) {
    pipeline.parallelGradients = AutoSwitch::On;
    if (tryTiles()) {
      placed = true;
    } else {
      pipeline.parallelGradients = AutoSwitch::Off;
      placed = placed && tryTiles();
    }
  }
  // A loop whose copies overflow shared memory at full value width may fit
  // at half of it (hla3 at d = 64: 332 KB at 64 columns; hla2 at d = 128:
  // 266 KB at 128).
  if (!placed && requested.valueTile == -1 &&
      pipeline.schedule == KernelSchedule::Persistent &&
      narrowerValueTile(0, width)) {
    pipeline.valueTile = narrowerValueTile(0, width);
    placed = tryTiles();
    if (!placed)
      pipeline.valueTile = requested.valueTile;
  }
  // The segmented form's run count weighs blocks against the runs'
  // sequential work (hla-chunk's model): its blocks are not held to half
  // the SMs, nor are a derived backward's, whose gradients were weighed
  // above.
  if (placed &&
      (pipeline.schedule == KernelSchedule::Segmented || !fewBlocks(*trial) ||
       hasPrefixVjp(*pristine) || hoisted) &&
      succeeded(generateKernels(*trial))) {
    adopt(std::move(trial));
    return true;
  }
  pipeline.valueTile = requested.valueTile;
  pipeline.generator = ChunkLoopGenerator::Phases;
  pipeline.schedule = schedule;
  pipeline.chunkSize = chunk;
  pipeline.hoistChunkWork = requested.hoistChunkWork;
  hoisted = false;
  if (choosesGradients)
    pipeline.parallelGradients = AutoSwitch::Off;
  return false;
}

bool KernelSearch::trySegmentedSchedule() {
  // The auto schedule is the segmented one where it helps (few sequence-
  // head pairs) and its kernels fit in shared memory: tried on a copy,
  // quietly, falling back to the persistent schedule (whose diagnostics are
  // then the real ones). Kernels that stream state through device-memory
  // scratch lose more in the segmented schedule's two passes than its
  // extra blocks gain (56 vs 24 ms at hla2 4x16x8192x128), so those take the
  // persistent schedule too. wgmma's staging buffers can be what pushes the
  // segmented kernels into scratch; they are then tried with mma.sync
  // (which stages nothing) before the persistent schedule (1x16x65536x64,
  // chunk 64: 10.8 ms segmented with mma.sync, 43.9 ms persistent with
  // wgmma).
  TimingScope search = phase("CUDA schedule search");
  llvm::SmallVector<MmaInstruction, 2> instructions = {pipeline.mma};
  if (pipeline.mma == MmaInstruction::Auto && pipeline.chip == "sm_90a")
    instructions.push_back(MmaInstruction::MmaSync);
  MmaInstruction chosen = pipeline.mma;
  for (MmaInstruction mma : instructions) {
    OwningOpRef<ModuleOp> trial = module.clone();
    pipeline.mma = mma;
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    // Judged on the mapping alone: a trial that streams its state through
    // scratch never reaches NVVM and PTX (hla3's backward at d = 64 spent
    // most of its four minutes of compilation in those of such trials).
    if (succeeded(mapKernels(*trial)) && !usesDeviceScratch(*trial) &&
        succeeded(generateKernels(*trial))) {
      adopt(std::move(trial));
      return true;
    }
  }
  pipeline.schedule = KernelSchedule::Persistent;
  pipeline.mma = chosen;
  return false;
}

LogicalResult KernelSearch::buildDevice() {
  bool compiled = false;
  if (pipeline.generator == ChunkLoopGenerator::Auto &&
      requested.chunkSize == 0 && pipeline.chip == "sm_90a")
    compiled = tryRegisterTiles();
  // The phases' chunk, fastest there on an H200; LinSimp's is 16, whose
  // stacked anchor passes fit shared memory (1x16x2048, m = 64, W = 64:
  // 3.8 ms at 16, 31.9 at 32; bench/RESULTS.md).
  if (!compiled && pipeline.chunkSize == 0)
    pipeline.chunkSize = linSimp ? 16 : 32;
  if (!compiled && pipeline.schedule == KernelSchedule::Auto)
    compiled = trySegmentedSchedule();
  if (compiled)
    return success();
  PassManager device(module.getContext());
  buildCUDADevicePipeline(device, pipeline);
  TimingScope timed = phase("CUDA device pipeline");
  if (settings.timing)
    device.enableTiming(timed);
  return device.run(module);
}

LogicalResult KernelSearch::run(std::string &error) {
  if (pipeline.mma == MmaInstruction::Wgmma && pipeline.chip != "sm_90a") {
    error = "mma=wgmma needs chip=sm_90a (got " + pipeline.chip + ")";
    return failure();
  }
  if (failed(buildDevice()))
    return failure();
  // The prefetched tiles' second buffers can push a kernel's buffers into
  // device-memory scratch, which costs more than the prefetch gains (hla2
  // 8x16x8192x64 with 64-token chunks: 6.48 ms with, 5.59 without): such
  // kernels are rebuilt without it.
  if (usesDeviceScratch() && pipeline.tmaPrefetch == AutoSwitch::Auto) {
    restore();
    pipeline.tmaPrefetch = AutoSwitch::Off;
    pipeline.schedule = requested.schedule;
    pipeline.mma = requested.mma;
    if (failed(buildDevice()))
      return failure();
  }
  // LinSimp's stacked anchor passes hold [G · c, m] tiles; where they push
  // the phases' buffers into device-memory scratch, fewer rows per pass
  // (1x16x2048, m = 256, W = 64, chunk 16: 169 ms at 64 rows, 116 at 32,
  // 19.0 at 16, which fit; bench/RESULTS.md).
  while (linSimp && requested.anchorRows == 0 && usesDeviceScratch() &&
         pipeline.anchorRows > pipeline.chunkSize) {
    restore();
    pipeline.anchorRows = pipeline.anchorRows / 2;
    pipeline.schedule = requested.schedule;
    pipeline.mma = requested.mma;
    if (failed(buildDevice()))
      return failure();
  }
  if (!settings.assemble)
    return success();

  // TMA loads keep their tensor maps and mbarriers in registers; in kernels
  // already at the register limit (hla2 at d = 128) that spills, and
  // ptxas's verdict sends them back to the threads' copies.
  int64_t spills = 0;
  // The widest register-tile kernels ptxas spilled, kept for when the
  // shared-memory phases would stream their state through device memory.
  struct TileChoice {
    int64_t chunkSize, valueTile, warpgroups;
    AutoSwitch parallelGradients;
    KernelSchedule schedule;
  };
  std::optional<TileChoice> spillingTiles;
  bool allowSpills = settings.allowSpills || hoisted || cutGradients;
  TimingScope assembly = phase("ptxas");
  while (failed(assembleKernels(module, pipeline, settings.ptxasLog, spills,
                                error, allowSpills))) {
    // Kernels ptxas refuses (spills): register tiles (chosen by the
    // search, or placed where they could be) go back to the shared-memory
    // phases first; then TMA's registers are given up.
    bool tiles = pipeline.generator == ChunkLoopGenerator::Auto ||
                 (pipeline.generator == ChunkLoopGenerator::Tiles &&
                  requested.generator == ChunkLoopGenerator::Auto);
    if (!tiles && (pipeline.tma != AutoSwitch::Auto || spills == 0)) {
      // The last resort of an automatic choice: the phases as they are,
      // spilling, where no narrower form exists (hla3's derived backward
      // at d = 64 ended here, 588 bytes per thread, until its gradient
      // pass took two warpgroups on the tiles). Options the caller fixed
      // still fail on spills.
      if (spills == 0 || requested.generator != ChunkLoopGenerator::Auto ||
          allowSpills)
        return failure();
      allowSpills = true;
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
    // A derived backward whose reverse pass, carrying the tokens'
    // gradients on two warpgroups, spills is kept so: its spills cost less
    // than a pass of their own for the gradients or narrower value tiles
    // (AHLA 8x16x2048: 0.64 ms spilling, 0.85 with parallel gradients that
    // do not spill; linear attention 4x16x8192x128: 2.18 against 2.57;
    // H200, 2026-12-04).
    if (tiles && pipeline.generator == ChunkLoopGenerator::Tiles &&
        choosesGradients && pipeline.parallelGradients == AutoSwitch::Off &&
        !oneWarpgroup && !allowSpills) {
      allowSpills = true;
      error.clear();
      continue;
    }
    restore();
    KernelSchedule spilledSchedule = pipeline.schedule;
    pipeline.schedule = requested.schedule;
    pipeline.mma = requested.mma;
    // The first spilling tiles of the search past one warpgroup: the widest,
    // and for a derived backward the reverse pass carrying the gradients.
    if (tiles && pipeline.generator == ChunkLoopGenerator::Tiles &&
        !oneWarpgroup && !spillingTiles)
      spillingTiles = TileChoice{pipeline.chunkSize, pipeline.valueTile,
                                 pipeline.warpgroups,
                                 pipeline.parallelGradients, spilledSchedule};
    if (tiles && pipeline.generator == ChunkLoopGenerator::Tiles &&
        oneWarpgroup && requested.warpgroups == 0 && pipeline.warpgroups == 0 &&
        mapsWithWarpgroups(2)) {
      // Two warpgroups first, each with half of every fragment's columns,
      // at the same value tiles: linear attention at d = 128 with causal
      // isolation spills 40 bytes in one warpgroup at 64 columns, which
      // 32-column tiles would double the blocks for.
      pipeline.warpgroups = 2;
    } else if (tiles && requested.valueTile == -1 &&
               narrowerValueTile(pipeline.valueTile, width) &&
               tilesPlaceAt(narrowerValueTile(pipeline.valueTile, width))) {
      // Then narrower value tiles: fewer registers for the value-wide state
      // and outputs (hla3 at 2x16x32768 fits at 32 columns). Only where
      // register tiles take the loops at that width: the spilling kernels
      // may be phases the automatic generator fell back to (KDA, with a
      // chunk size given), which then stay phases.
      pipeline.generator = ChunkLoopGenerator::Tiles;
      pipeline.schedule = KernelSchedule::Persistent;
      pipeline.valueTile = narrowerValueTile(pipeline.valueTile, width);
      pipeline.warpgroups = requested.warpgroups;
    } else if (tiles) {
      pipeline.generator = ChunkLoopGenerator::Phases;
      if (choosesGradients)
        pipeline.parallelGradients = AutoSwitch::Off;
      pipeline.chunkSize = requested.chunkSize;
      pipeline.valueTile = requested.valueTile;
      pipeline.warpgroups = requested.warpgroups;
    } else {
      pipeline.tma = AutoSwitch::Off;
    }
    error.clear();
    if (failed(buildDevice()))
      return failure();
    // The phases lose to register tiles that spill to local memory, which
    // stays in L1, wherever both were measured: hla2 8x16x2048x128 (state
    // in device-memory scratch on the phases) ran 5.58 ms on the phases,
    // 0.80 ms on 64-column tiles spilling 1,584 bytes, 1.12 ms on 32-column
    // ones spilling 756 (bench/RESULTS.md); hla2's derived backward at
    // 8x16x2048 5.27 ms, 1.23 on tiles whose reverse pass spilled 1,592
    // bytes (H200, 2026-12-04); KDA 4x16x4096 3.08 ms, 1.65 on tiles
    // spilling 156 bytes, 8x16x8192 6.38 against 3.55 (H100, 2026-12-06).
    // The first spilling tiles are kept then, in the schedule asked for, if
    // one was, else in theirs (KDA 1x16x16384: 1.42 ms in 8 runs, 6.66 in
    // the persistent schedule's 32 blocks), a derived backward's in the
    // persistent one (its runs are the segmented schedule's).
    if (pipeline.generator == ChunkLoopGenerator::Phases && spillingTiles) {
      restore();
      pipeline.generator = ChunkLoopGenerator::Tiles;
      pipeline.schedule = requested.schedule != KernelSchedule::Auto
                              ? requested.schedule
                          : hasPrefixVjp(*pristine) ? KernelSchedule::Persistent
                                                    : spillingTiles->schedule;
      pipeline.chunkSize = spillingTiles->chunkSize;
      pipeline.valueTile = spillingTiles->valueTile;
      pipeline.warpgroups = spillingTiles->warpgroups;
      pipeline.parallelGradients = spillingTiles->parallelGradients;
      spillingTiles.reset();
      allowSpills = true;
      if (failed(buildDevice()))
        return failure();
    }
  }
  return success();
}

namespace {

struct CUDAKernelSearchPass
    : public PassWrapper<CUDAKernelSearchPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CUDAKernelSearchPass)

  CUDAKernelSearchPass(const CUDAPipelineOptions &requested,
                       CUDAKernelSearchSettings settings)
      : settings(std::move(settings)) {
    this->requested.copyOptionValuesFrom(requested);
  }
  CUDAKernelSearchPass(const CUDAKernelSearchPass &other)
      : PassWrapper(other), settings(other.settings) {
    requested.copyOptionValuesFrom(other.requested);
  }

  StringRef getArgument() const override { return "hla-cuda-kernels"; }
  StringRef getDescription() const override {
    return "Build a graph's CUDA kernels with the options a search settles "
           "on, recorded as hla.cuda_options";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    KernelSearch search(module, requested, settings);
    std::string error;
    if (failed(search.run(error))) {
      if (!error.empty())
        module.emitError() << "hla-cuda-kernels: " << error;
      return signalPassFailure();
    }
    // The decision: hla-cuda-pipeline with exactly these options rebuilds
    // these kernels. The auto schedule that survives the search is the
    // segmented one (hla-chunk's run count then decides).
    CUDAPipelineOptions &decided = search.pipeline;
    if (decided.schedule == KernelSchedule::Auto)
      decided.schedule = KernelSchedule::Segmented;
    std::string text;
    llvm::raw_string_ostream stream(text);
    decided.print(stream);
    module->setAttr("hla.cuda_options",
                    StringAttr::get(module.getContext(),
                                    llvm::StringRef(text).trim().trim("{}")));
  }

  CUDAPipelineOptions requested;
  CUDAKernelSearchSettings settings;
};

} // namespace

std::unique_ptr<Pass>
mlir::hla::createCUDAKernelSearchPass(const CUDAPipelineOptions &requested,
                                      CUDAKernelSearchSettings settings) {
  return std::make_unique<CUDAKernelSearchPass>(requested, std::move(settings));
}

void mlir::hla::registerCUDAKernelSearch() {
  PassPipelineRegistration<CUDAPipelineOptions>(
      "hla-cuda-kernels",
      "Build a graph's CUDA kernels (cubins in gpu.binary) with the options "
      "left to it (chunk-size=0, value-tile=-1, warpgroups=0, every auto) "
      "chosen by trial, ptxas judging spills; records the options decided "
      "as the module's hla.cuda_options",
      [](OpPassManager &pm, const CUDAPipelineOptions &options) {
        pm.addPass(createCUDAKernelSearchPass(options));
      });
}
