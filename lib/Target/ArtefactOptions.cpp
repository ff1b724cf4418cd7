//===- ArtefactOptions.cpp - The knobs of an artefact compile ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one list of the options an artefact compile takes: hla-opt makes its
// flags from it (--chunk-size=...), the C API parses its options string with
// it ("chunk-size=... cuda-mma=..."), and the Python package passes its
// keywords through to that string. A knob has one name, one meaning, one
// validation and one default everywhere.
//
//===----------------------------------------------------------------------===//

#include "hla/Target/Artefact.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <functional>

using namespace mlir;
using namespace mlir::hla;

namespace {

using Setter = std::function<LogicalResult(
    llvm::StringRef value, ArtefactOptions &options, std::string &error)>;

struct Knob {
  const char *name;
  const char *help;
  /// The value hla-opt shows as the default (what ArtefactOptions holds).
  std::function<std::string(const ArtefactOptions &)> shown;
  Setter set;
};

Setter integer(int64_t ArtefactOptions::*field, int64_t min, int64_t max,
               const char *name) {
  return [=](llvm::StringRef value, ArtefactOptions &options,
             std::string &error) -> LogicalResult {
    int64_t parsed = 0;
    if (value.getAsInteger(10, parsed) || parsed < min || parsed > max) {
      error = "option '" + std::string(name) + "' needs an integer in [" +
              std::to_string(min) + ", " + std::to_string(max) + "], not '" +
              value.str() + "'";
      return failure();
    }
    options.*field = parsed;
    return success();
  };
}

Setter boolean(bool ArtefactOptions::*field, const char *name) {
  return [=](llvm::StringRef value, ArtefactOptions &options,
             std::string &error) -> LogicalResult {
    // What LLVM's boolean flags take; a bare flag (--vectorize) is true.
    if (llvm::is_contained({"", "true", "True", "TRUE", "1"}, value)) {
      options.*field = true;
      return success();
    }
    if (llvm::is_contained({"false", "False", "FALSE", "0"}, value)) {
      options.*field = false;
      return success();
    }
    error = "option '" + std::string(name) + "' needs true or false, not '" +
            value.str() + "'";
    return failure();
  };
}

Setter text(std::string ArtefactOptions::*field, const char *name,
            std::vector<llvm::StringRef> allowed = {}) {
  return [=](llvm::StringRef value, ArtefactOptions &options,
             std::string &error) -> LogicalResult {
    if (!allowed.empty() && !llvm::is_contained(allowed, value)) {
      error = "option '" + std::string(name) + "' needs one of " +
              llvm::join(allowed, ", ") + ", not '" + value.str() + "'";
      return failure();
    }
    options.*field = value.str();
    return success();
  };
}

/// A mode option: its spellings are those of modeSpellings<Mode>().
template <typename Mode>
Setter mode(Mode ArtefactOptions::*field, const char *name) {
  return [=](llvm::StringRef value, ArtefactOptions &options,
             std::string &error) -> LogicalResult {
    std::optional<Mode> parsed = parseMode<Mode>(value);
    if (!parsed) {
      error = "option '" + std::string(name) + "' needs " + modeNames<Mode>() +
              ", not '" + value.str() + "'";
      return failure();
    }
    options.*field = *parsed;
    return success();
  };
}

template <typename T>
std::function<std::string(const ArtefactOptions &)>
show(T ArtefactOptions::*field) {
  return [=](const ArtefactOptions &options) {
    if constexpr (std::is_enum_v<T>)
      return modeName(options.*field).str();
    else if constexpr (std::is_same_v<T, bool>)
      return std::string(options.*field ? "true" : "false");
    else if constexpr (std::is_same_v<T, std::string>)
      return options.*field;
    else
      return std::to_string(options.*field);
  };
}

const std::vector<Knob> &knobs() {
  using O = ArtefactOptions;
  static const std::vector<Knob> table = {
      {"chunk-size",
       "Tokens per chunk (0: the target's, 64 on CPUs, 32 on CUDA)",
       show(&O::chunkSize), integer(&O::chunkSize, 1, 1 << 20, "chunk-size")},
      {"chunk-form",
       "CPU: the chunked form: phased, fused or segmented (hla-chunk; "
       "segmented with segments=0 is the fused form wherever the (sequence, "
       "head) pairs fill the threads)",
       show(&O::chunkForm), mode(&O::chunkForm, "chunk-form")},
      {"scan-schedule",
       "CPU: the scan over chunk summaries (auto: blelloch where the "
       "(sequence, head) pairs leave threads idle; sequential; blelloch)",
       show(&O::scanSchedule), mode(&O::scanSchedule, "scan-schedule")},
      {"cuda-schedule",
       "CUDA: the kernels' decomposition (auto: chosen by trial; "
       "persistent: one block per (sequence, head) over all its chunks; "
       "segmented: runs of chunks in parallel, their states combined)",
       show(&O::cudaSchedule), mode(&O::cudaSchedule, "cuda-schedule")},
      {"segments",
       "Segmented form/schedule: runs of chunks per sequence (0: chosen for "
       "the target)",
       show(&O::segments), integer(&O::segments, 0, 1 << 20, "segments")},
      {"value-tile",
       "Fused form / persistent schedule: value columns per thread block or "
       "loop iteration (0: all; -1: auto, tiles where the (sequence, head) "
       "pairs leave the target idle; components without value columns are "
       "recomputed per tile)",
       show(&O::valueTile), integer(&O::valueTile, -1, 1 << 20, "value-tile")},
      {"linsimp-stable-features",
       "LinSimp: shift anchor-feature exponents by each query's running "
       "maximum (cancels exactly; off to compare)",
       show(&O::stableFeatures),
       boolean(&O::stableFeatures, "linsimp-stable-features")},
      {"linsimp-anchor-rows",
       "LinSimp: readout rows of one pass over the anchor window; each pass "
       "stacks the most anchor offsets whose chunk rows fit (hla-chunk's "
       "anchor-rows; 0: the target's, CPU 64, CUDA 64 halved while the "
       "kernels need device-memory scratch)",
       show(&O::anchorRows),
       integer(&O::anchorRows, 0, 1 << 20, "linsimp-anchor-rows")},
      {"causal-isolation",
       "Outputs before a token holding NaN or inf stay finite (a chunk "
       "holding one is read out a second time)",
       show(&O::causalIsolation),
       boolean(&O::causalIsolation, "causal-isolation")},
      {"vjp",
       "Compile the entry function's backward instead, f(inputs..., "
       "d_output) -> the inputs' gradients (hla-derive-vjp)",
       show(&O::vjp), boolean(&O::vjp, "vjp")},
      {"summary-entries",
       "Also compile the entry function's summary and combine, "
       "<entry>_summary and <entry>_combine: the pieces that split one "
       "sequence across devices (hla-add-summary-entries)",
       show(&O::summaryEntries),
       boolean(&O::summaryEntries, "summary-entries")},
      {"scan-threads",
       "CPU: threads the auto scan schedule and the segmented form plan for",
       show(&O::scanThreads),
       integer(&O::scanThreads, 1, 1 << 16, "scan-threads")},
      {"vectorize", "CPU: tile and vectorise the chunk math",
       show(&O::vectorize), boolean(&O::vectorize, "vectorize")},
      {"cuda-chip", "CUDA: GPU architecture", show(&O::cudaChip),
       text(&O::cudaChip, "cuda-chip")},
      {"cuda-features", "CUDA: PTX features", show(&O::cudaFeatures),
       text(&O::cudaFeatures, "cuda-features")},
      {"cuda-mma",
       "CUDA: tensor-core instruction of chunk contractions (auto: wgmma on "
       "sm_90a, mma.sync elsewhere; wgmma; mma.sync)",
       show(&O::cudaMma), mode(&O::cudaMma, "cuda-mma")},
      {"cuda-generator",
       "CUDA: chunk-loop code generator (auto: register tiles where they "
       "apply, else shared-memory phases; tiles; phases)",
       show(&O::cudaGenerator), mode(&O::cudaGenerator, "cuda-generator")},
      {"parallel-gradients",
       "The derived backward (--vjp): the tokens' gradients in a pass of "
       "their own, parallel over (sequence, head, chunk), after a reverse "
       "pass that saves the state's cotangent per chunk (auto: where CUDA "
       "register tiles take the backward, not on the CPU; on; off)",
       show(&O::parallelGradients),
       mode(&O::parallelGradients, "parallel-gradients")},
      {"hoist-chunk-work",
       "Fused chunk loops (CUDA's persistent kernels, the CPU's fused form): "
       "the work the carried state does not reach in a pass parallel over "
       "chunks ahead of the loop, its tiles stacked in memory (KDA), or the "
       "output rows in one after it from the stacked states (LinSimp) "
       "(auto: with CUDA register tiles, not on the CPU; on; off)",
       show(&O::hoistChunkWork), mode(&O::hoistChunkWork, "hoist-chunk-work")},
      {"bf16-products",
       "16-bit ops' matrix products whose results cancel (LinSimp's "
       "backward) split into products of bf16-exact parts (auto: where "
       "CUDA's tensor cores round operands to bf16, not on the CPU; on; off)",
       show(&O::bf16Products), mode(&O::bf16Products, "bf16-products")},
      {"split-gradients",
       "The derived backward with parallel gradients: one pass per input's "
       "gradient, each recomputing the chunk's summary but holding fewer "
       "tiles at once",
       show(&O::splitGradients),
       boolean(&O::splitGradients, "split-gradients")},
      {"fission-live-bytes",
       "Passes parallel over chunks (the backward's gradients) cut into "
       "stages whose tiles alive at once stay within this many bytes, the "
       "tiles between stages in device memory (hla-fission-chunk-passes; "
       "0: uncut)",
       show(&O::fissionLiveBytes),
       integer(&O::fissionLiveBytes, 0, int64_t(1) << 30,
               "fission-live-bytes")},
      {"cuda-warpgroups",
       "CUDA register tiles: warpgroups per block, each holding its share of "
       "every fragment's columns (0: auto, two where one would hold more "
       "than 128 fragment registers per thread; 1; 2)",
       show(&O::cudaWarpgroups),
       integer(&O::cudaWarpgroups, 0, 2, "cuda-warpgroups")},
      {"cuda-allow-spills",
       "CUDA: keep kernels ptxas spills registers in, as the other options "
       "make them (otherwise the search tries others, and options given "
       "fail)",
       show(&O::cudaAllowSpills),
       boolean(&O::cudaAllowSpills, "cuda-allow-spills")},
      {"cuda-threads",
       "CUDA: threads per thread block (a multiple of 128 for wgmma)",
       show(&O::cudaThreads),
       integer(&O::cudaThreads, 32, 1024, "cuda-threads")},
      {"cuda-toolkit",
       "CUDA: toolkit root (ptxas, libdevice; empty: $CUDA_HOME, else the "
       "configured one)",
       show(&O::cudaToolkit), text(&O::cudaToolkit, "cuda-toolkit")},
      {"entry", "The function an executable runs", show(&O::entry),
       text(&O::entry, "entry")},
      {"ptxas-log", "CUDA: a file for ptxas's -v report (empty: none)",
       show(&O::ptxasLog), text(&O::ptxasLog, "ptxas-log")},
      {"runtime-dir",
       "Where the artefact runtimes are (empty: $HLA_RUNTIME_DIR, else next "
       "to the compiler)",
       show(&O::runtimeDirectory), text(&O::runtimeDirectory, "runtime-dir")},
  };
  return table;
}

} // namespace

std::vector<ArtefactKnob> mlir::hla::getArtefactKnobs() {
  ArtefactOptions defaults;
  std::vector<ArtefactKnob> result;
  for (const Knob &knob : knobs())
    result.push_back({knob.name, knob.help, knob.shown(defaults)});
  return result;
}

LogicalResult mlir::hla::setArtefactOption(llvm::StringRef key,
                                           llvm::StringRef value,
                                           ArtefactOptions &options,
                                           std::string &error) {
  for (const Knob &knob : knobs())
    if (key == knob.name)
      return knob.set(value, options, error);
  llvm::SmallVector<llvm::StringRef> names;
  for (const Knob &knob : knobs())
    names.push_back(knob.name);
  error = "unknown option '" + key.str() +
          "' (known: " + llvm::join(names, ", ") + ")";
  return failure();
}

LogicalResult mlir::hla::parseArtefactOptions(llvm::StringRef text,
                                              ArtefactOptions &options,
                                              std::string &error) {
  llvm::SmallVector<llvm::StringRef> pairs;
  llvm::SplitString(text, pairs, " \t\n");
  for (llvm::StringRef pair : pairs) {
    auto [key, value] = pair.split('=');
    if (!pair.contains('=')) {
      error = "option '" + pair.str() + "' is not of the form key=value";
      return failure();
    }
    if (failed(setArtefactOption(key, value, options, error)))
      return failure();
  }
  return success();
}
