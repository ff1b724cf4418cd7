//===- Modes.h - The mode options of hla's passes and pipelines -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every option that picks one of a few modes (a chunked form, a scan or
// kernel schedule, a tensor-core instruction, ...) is an enum with one table
// of spellings here. Pass options (TableGen), pipeline options and the
// artefact options (hla-opt, C API, Python) all parse and print through
// these tables, so a mode has one name everywhere and an unknown one is
// refused by the parser with the list of the known ones.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_MODES_H
#define HLA_DIALECT_HLA_MODES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

namespace mlir::hla {

/// hla-chunk's chunked form (CPU pipeline: chunk-form).
enum class ChunkForm { Phased, Fused, Segmented };
/// The scan over chunks on the CPU (hla-lower-scans).
enum class ScanSchedule { Auto, Sequential, Blelloch };
/// The decomposition of a CUDA graph's chunk loops into kernels.
enum class KernelSchedule { Auto, Persistent, Segmented };
/// The tensor-core instruction of chunk contractions.
enum class MmaInstruction { Auto, MmaSync, Wgmma };
/// What generates the code of CUDA chunk loops.
enum class ChunkLoopGenerator { Auto, Tiles, Phases };
/// A feature that is on, off, or decided for the target (tensor cores, TMA).
enum class AutoSwitch { Auto, On, Off };

/// One spelling of a mode.
template <typename Mode>
struct ModeSpelling {
  Mode mode;
  const char *name;
  const char *help;
};

/// The spellings of each mode enum.
template <typename Mode>
llvm::ArrayRef<ModeSpelling<Mode>> modeSpellings();

template <>
inline llvm::ArrayRef<ModeSpelling<ChunkForm>> modeSpellings() {
  static const ModeSpelling<ChunkForm> table[] = {
      {ChunkForm::Phased, "phased",
       "three phases: chunk summaries, their scan, the readouts"},
      {ChunkForm::Fused, "fused",
       "one loop over a sequence's chunks per (sequence, head), carrying "
       "the state"},
      {ChunkForm::Segmented, "segmented",
       "fused loops over runs of chunks, their summaries combined"}};
  return table;
}

template <>
inline llvm::ArrayRef<ModeSpelling<ScanSchedule>> modeSpellings() {
  static const ModeSpelling<ScanSchedule> table[] = {
      {ScanSchedule::Auto, "auto",
       "blelloch where the other axes hold fewer scans than the threads"},
      {ScanSchedule::Sequential, "sequential", "one carry, in order"},
      {ScanSchedule::Blelloch, "blelloch",
       "work-efficient parallel up- and down-sweep"}};
  return table;
}

template <>
inline llvm::ArrayRef<ModeSpelling<KernelSchedule>> modeSpellings() {
  static const ModeSpelling<KernelSchedule> table[] = {
      {KernelSchedule::Auto, "auto",
       "segmented where the (sequence, head) pairs leave SMs idle"},
      {KernelSchedule::Persistent, "persistent",
       "one thread block per (sequence, head) loops over all its chunks"},
      {KernelSchedule::Segmented, "segmented",
       "runs of chunks per sequence in parallel, their states combined"}};
  return table;
}

template <>
inline llvm::ArrayRef<ModeSpelling<MmaInstruction>> modeSpellings() {
  static const ModeSpelling<MmaInstruction> table[] = {
      {MmaInstruction::Auto, "auto", "wgmma on sm_90a, mma.sync elsewhere"},
      {MmaInstruction::MmaSync, "mma.sync", "warp-level (sm_80 and later)"},
      {MmaInstruction::Wgmma, "wgmma", "warpgroup-level (sm_90a)"}};
  return table;
}

template <>
inline llvm::ArrayRef<ModeSpelling<ChunkLoopGenerator>> modeSpellings() {
  static const ModeSpelling<ChunkLoopGenerator> table[] = {
      {ChunkLoopGenerator::Auto, "auto",
       "register tiles where they apply, shared-memory phases elsewhere"},
      {ChunkLoopGenerator::Tiles, "tiles",
       "register tiles for every chunk loop, else an error"},
      {ChunkLoopGenerator::Phases, "phases", "shared-memory phases only"}};
  return table;
}

template <>
inline llvm::ArrayRef<ModeSpelling<AutoSwitch>> modeSpellings() {
  static const ModeSpelling<AutoSwitch> table[] = {
      {AutoSwitch::Auto, "auto", "decided for the target"},
      {AutoSwitch::On, "on", "on"},
      {AutoSwitch::Off, "off", "off"}};
  return table;
}

/// The name of `mode` as options spell it.
template <typename Mode>
llvm::StringRef modeName(Mode mode) {
  for (const ModeSpelling<Mode> &spelling : modeSpellings<Mode>())
    if (spelling.mode == mode)
      return spelling.name;
  return "";
}

/// The mode spelled `name`, if any.
template <typename Mode>
std::optional<Mode> parseMode(llvm::StringRef name) {
  for (const ModeSpelling<Mode> &spelling : modeSpellings<Mode>())
    if (name == spelling.name)
      return spelling.mode;
  return std::nullopt;
}

/// "a, b or c": the names a mode option takes, for messages.
template <typename Mode>
std::string modeNames() {
  llvm::SmallVector<llvm::StringRef> names;
  for (const ModeSpelling<Mode> &spelling : modeSpellings<Mode>())
    names.push_back(spelling.name);
  std::string last = names.pop_back_val().str();
  return names.empty() ? last : llvm::join(names, ", ") + " or " + last;
}

/// A command-line modifier (like llvm::cl::values) that gives an option of
/// type `Mode` the spellings of modeSpellings<Mode>(). Used by the passes'
/// TableGen options and the pipelines' options.
template <typename Mode>
struct ModeValues {
  template <typename Opt>
  void apply(Opt &option) const {
    for (const ModeSpelling<Mode> &spelling : modeSpellings<Mode>())
      option.getParser().addLiteralOption(spelling.name, spelling.mode,
                                          spelling.help);
  }
};

template <typename Mode>
ModeValues<Mode> modeValues() {
  return {};
}

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_MODES_H
