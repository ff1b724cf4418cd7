//===- FissionChunkPasses.cpp - A parallel pass cut into stages ---------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-fission-chunk-passes (Passes.td): a pass parallel over chunks whose
// tiles alive at once would not fit in registers is cut, in program order,
// into stages that fit a budget of live bytes; tiles a later stage reads
// cross through stacks in device memory (hla-hoist-chunk-work's layout,
// which the register tiles read back on demand). KDA's gradients need the
// forward tiles of every use of Γ at once when run as one program.
//
//===----------------------------------------------------------------------===//

#include "HoistChunkWork.h"

#include "hla/Dialect/HLA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

namespace mlir::hla {
#define GEN_PASS_DEF_HLAFISSIONCHUNKPASSESPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// A product of two matrices into a matrix (what tensor cores run; a
/// product with a vector is a reduction by threads).
bool isProduct(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalg::isaContractionOpInterface(linalgOp) &&
         llvm::all_of(linalgOp->getOperandTypes(), [](Type t) {
           auto tensor = dyn_cast<RankedTensorType>(t);
           return tensor && tensor.getRank() == 2;
         });
}

/// Bytes of a static tensor (0 for anything else: scalars are recomputed).
int64_t bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return 0;
  return tensor.getNumElements() *
         llvm::divideCeil(tensor.getElementType().getIntOrFloatBitWidth(), 8);
}

/// Whether a tile of `type` can cross between stages through a stack: a
/// vector, or a tile as rows (a tile in blocks, [blocks, rows, ...], as the
/// rows it views).
bool stackable(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getRank() >= 1 &&
         tensor.getRank() <= 4 &&
         (tensor.getElementType().isF32() || tensor.getElementType().isBF16());
}

/// The reassociation viewing a tile of `rank` (3 or 4) as rows: its first
/// two dimensions as rows, the rest as columns.
llvm::SmallVector<ReassociationIndices> asRows(int64_t rank) {
  llvm::SmallVector<ReassociationIndices> groups = {{0, 1}, {}};
  for (int64_t d = 2; d < rank; ++d)
    groups[1].push_back(d);
  return groups;
}

/// The type a stack holds one chunk's `type` as: itself, or its rows.
RankedTensorType stackedType(RankedTensorType type, Type element) {
  llvm::ArrayRef<int64_t> shape = type.getShape();
  if (type.getRank() <= 2)
    return RankedTensorType::get(shape, element);
  int64_t cols = 1;
  for (int64_t extent : shape.drop_front(2))
    cols *= extent;
  return RankedTensorType::get({shape[0] * shape[1], cols}, element);
}

/// Whether `op` only views or maps the elements of its operands: a
/// reshape, a slice, an elementwise op. (Derived from one computed tile,
/// it is recomputed where read; an elementwise op of two is a tile of its
/// own, one stack rather than two.)
bool isDerived(Operation *op) {
  if (op->getNumResults() != 1 || !isMemoryEffectFree(op))
    return false;
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::ExtractSliceOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic && generic.getNumLoops() == generic.getNumParallelLoops();
}

/// A tile computed in the forall body: where it is defined and read, as
/// positions in the order of the body's computed ops (the terminator's
/// output writes at the end).
struct Tile {
  Value value;
  int64_t def;
  llvm::SmallVector<int64_t> uses; // sorted
  int64_t bytes;
};

/// A range [begin, end) of computed ops.
struct Stage {
  int64_t begin, end;
  int64_t peak = 0, products = 0;
};

class Fission {
public:
  Fission(scf::ForallOp forall, int64_t budget, bool bf16Operands)
      : forall(forall), body(forall.getBody()), budget(budget),
        bf16Operands(bf16Operands) {}

  /// Sorts the body's ops into recomputed and computed ones and cuts the
  /// latter into stages; false where the forall is not split.
  bool analyse();
  void rewrite();
  std::string summary() const;

private:
  bool recomputable(Value v) const;
  int64_t peak(int64_t begin, int64_t end) const;
  int64_t stageOf(int64_t position) const;
  /// Whether later stages read `tile` only as contractions' inputs.
  bool readAsOperandOnly(const Tile &tile) const;
  /// Which of the forall's outputs `write` writes.
  int64_t outputIndex(tensor::ParallelInsertSliceOp write) const;

  mutable scf::ForallOp forall; // (ODS accessors are not const)
  Block *body;
  int64_t budget;
  bool bf16Operands;

  llvm::DenseSet<Operation *> recomputed;
  /// Reshapes, slices and elementwise maps of one computed tile (KDA's
  /// reverse program views its tiles in blocks, reads rows of Γ, takes
  /// exponentials of it): cloned wherever read, the tile crossing between
  /// stages instead of them.
  llvm::DenseSet<Operation *> derived;
  llvm::SmallVector<Operation *> computed;
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::SmallVector<Tile> tiles;
  llvm::SmallVector<Stage> stages;
  /// The tiles some later stage reads (indices into `tiles`), and which of
  /// them go through bf16.
  llvm::SmallVector<int64_t> crossing;
  llvm::DenseSet<int64_t> inBF16;
};

bool Fission::recomputable(Value v) const {
  if (!forall.getRegion().isAncestor(v.getParentRegion()))
    return true; // from outside the forall
  if (llvm::is_contained(forall.getInductionVars(), v))
    return true;
  Operation *def = v.getDefiningOp();
  return def && recomputed.contains(def);
}

bool Fission::analyse() {
  if (llvm::any_of(forall.getMixedUpperBound(),
                   [](OpFoldResult ub) { return !getConstantIntValue(ub); }) ||
      forall.getInductionVars().size() < 2)
    return false;
  llvm::DenseSet<Value> outputs(forall.getRegionIterArgs().begin(),
                                forall.getRegionIterArgs().end());
  for (Operation &op : body->without_terminator()) {
    if (op.getNumRegions() && !isa<linalg::LinalgOp>(op))
      return false; // loops, branches: not straight-line
    llvm::SmallVector<Value> read = valuesRead(&op);
    if (llvm::any_of(read, [&](Value v) { return outputs.contains(v); }))
      return false; // reads an output being written
    if (isMemoryEffectFree(&op) && !isReduction(&op) &&
        llvm::all_of(read, [&](Value v) { return recomputable(v); })) {
      recomputed.insert(&op);
      continue;
    }
    if (isDerived(&op) &&
        llvm::count_if(read, [&](Value v) { return !recomputable(v); }) <= 1) {
      derived.insert(&op);
      continue;
    }
    position[&op] = computed.size();
    computed.push_back(&op);
  }
  int64_t end = computed.size();
  // Where a value is read: by computed ops (through views of it too) and
  // by the output writes.
  std::function<void(Value, llvm::SmallVector<int64_t> &)> readersOf =
      [&](Value value, llvm::SmallVector<int64_t> &uses) {
        for (OpOperand &use : value.getUses()) {
          Operation *reader = body->findAncestorOpInBlock(*use.getOwner());
          if (derived.contains(reader))
            readersOf(reader->getResult(0), uses);
          else
            uses.push_back(reader == body->getTerminator()
                               ? end
                               : position.lookup(reader));
        }
      };
  for (Operation *op : computed)
    for (Value result : op->getResults()) {
      Tile tile{result, position.lookup(op), {}, bytesOf(result.getType())};
      // (Uses through derived ops: the tile is read where they are.)
      readersOf(result, tile.uses);
      llvm::sort(tile.uses);
      tiles.push_back(std::move(tile));
    }

  // Greedy, in order: a stage grows while its peak fits (the peak only
  // grows with the stage) and until it holds a product.
  int64_t begin = 0, products = 0;
  for (int64_t next = 0; next < end;) {
    if (next > begin && products > 0 && peak(begin, next + 1) > budget) {
      stages.push_back({begin, next, peak(begin, next), products});
      begin = next;
      products = 0;
      continue;
    }
    products += isProduct(computed[next]);
    ++next;
  }
  // What follows the last product (the outputs' last steps) joins it.
  if (products == 0 && !stages.empty()) {
    products = stages.back().products;
    begin = stages.pop_back_val().begin;
  }
  stages.push_back({begin, end, peak(begin, end), products});
  if (stages.size() < 2)
    return false;

  for (auto [i, tile] : llvm::enumerate(tiles)) {
    int64_t from = stageOf(tile.def);
    bool later = llvm::any_of(
        tile.uses, [&](int64_t u) { return u < end && stageOf(u) > from; });
    if (!later)
      continue;
    if (!stackable(tile.value.getType()))
      return false;
    crossing.push_back(i);
    if (bf16Operands &&
        cast<RankedTensorType>(tile.value.getType()).getElementType().isF32() &&
        readAsOperandOnly(tile))
      inBF16.insert(i);
  }
  return true;
}

int64_t Fission::peak(int64_t begin, int64_t end) const {
  int64_t most = 0;
  for (int64_t at = begin; at < end; ++at) {
    int64_t live = 0;
    for (const Tile &tile : tiles) {
      if (tile.def > at || tile.uses.empty())
        continue;
      if (tile.def >= begin) {
        // From its definition to its last use, or to the stage's end where
        // a later stage or an output reads it.
        if (tile.uses.back() >= at)
          live += tile.bytes;
        continue;
      }
      // An earlier stage's tile: read back at its first use here, held to
      // its last use here.
      bool before = false, after = false;
      for (int64_t u : tile.uses) {
        before |= u >= begin && u <= at;
        after |= u >= at && u < end;
      }
      if (before && after)
        live += tile.bytes;
    }
    most = std::max(most, live);
  }
  return most;
}

int64_t Fission::stageOf(int64_t at) const {
  for (auto [k, stage] : llvm::enumerate(stages))
    if (at < stage.end)
      return k;
  return stages.size() - 1;
}

bool Fission::readAsOperandOnly(const Tile &tile) const {
  int64_t from = stageOf(tile.def);
  llvm::SmallVector<Value> values = {tile.value};
  while (!values.empty()) {
    for (OpOperand &use : values.pop_back_val().getUses()) {
      Operation *reader = body->findAncestorOpInBlock(*use.getOwner());
      if (derived.contains(reader)) {
        // A view keeps the values; a map of them (exp), which a later stage
        // may recompute, needs them exact.
        if (isa<linalg::GenericOp>(reader))
          return false;
        values.push_back(reader->getResult(0));
        continue;
      }
      auto at = position.find(reader);
      if (at == position.end() || stageOf(at->second) == from)
        continue;
      auto product = dyn_cast<linalg::LinalgOp>(use.getOwner());
      if (!product || !isProduct(product) || !product.isDpsInput(&use))
        return false;
    }
  }
  return true;
}

int64_t Fission::outputIndex(tensor::ParallelInsertSliceOp write) const {
  return llvm::find(forall.getRegionIterArgs(), write.getDest()) -
         forall.getRegionIterArgs().begin();
}

void Fission::rewrite() {
  Location loc = forall.getLoc();
  OpBuilder b(forall);
  llvm::SmallVector<int64_t> extents = forallExtents(forall);
  int64_t chunks = extents.back();
  llvm::ArrayRef<int64_t> outer = llvm::ArrayRef(extents).drop_back();
  int64_t end = computed.size();

  // The stack element of each crossing tile: bf16 where only contractions
  // read it later (with bf16-operands), f32 otherwise.
  auto stackElement = [&](int64_t i) -> Type {
    return inBF16.contains(i) ? b.getBF16Type() : b.getF32Type();
  };
  // Which stage writes each output: the one computing its rows.
  llvm::SmallVector<tensor::ParallelInsertSliceOp> writes;
  llvm::SmallVector<int64_t> writer;
  for (Operation &op : forall.getTerminator().getYieldingOps()) {
    auto insert = cast<tensor::ParallelInsertSliceOp>(op);
    writes.push_back(insert);
    // The last stage computing a tile it derives from (the last, for rows
    // of recomputed tiles alone).
    int64_t last = -1;
    llvm::SmallVector<Value> values = {insert.getSource()};
    while (!values.empty()) {
      Operation *def = values.pop_back_val().getDefiningOp();
      if (!def)
        continue;
      if (derived.contains(def))
        llvm::append_range(values, valuesRead(def));
      else if (auto at = position.find(def); at != position.end())
        last = std::max(last, stageOf(at->second));
    }
    writer.push_back(last < 0 ? stages.size() - 1 : last);
  }

  llvm::DenseMap<Value, Value> stackOf; // crossing tile -> its stack
  llvm::SmallVector<Value> results(forall.getNumResults());
  for (auto [k, stage] : llvm::enumerate(stages)) {
    // Outputs: the stacks this stage writes, then the forall's outputs.
    llvm::SmallVector<int64_t> exported;
    llvm::SmallVector<Value> inits;
    for (int64_t i : crossing) {
      if (stageOf(tiles[i].def) != int64_t(k))
        continue;
      exported.push_back(i);
      RankedTensorType rows = stackedType(
          cast<RankedTensorType>(tiles[i].value.getType()), stackElement(i));
      inits.push_back(tensor::EmptyOp::create(
          b, loc, stackShape(outer, rows, chunks), stackElement(i)));
    }
    llvm::SmallVector<int64_t> written;
    for (auto [w, insert] : llvm::enumerate(writes))
      if (writer[w] == int64_t(k)) {
        written.push_back(w);
        inits.push_back(forall.getOutputs()[outputIndex(insert)]);
      }
    auto staged = scf::ForallOp::create(
        b, loc, forall.getMixedLowerBound(), forall.getMixedUpperBound(),
        forall.getMixedStep(), inits, forall.getMapping());
    IRMapping mapping;
    mapping.map(forall.getInductionVars(), staged.getInductionVars());
    for (auto [j, w] : llvm::enumerate(written))
      mapping.map(writes[w].getDest(),
                  staged.getRegionIterArgs()[exported.size() + j]);

    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(staged.getTerminator());
    llvm::SmallVector<Value> ivs = staged.getInductionVars();
    ValueRange outerIvs = ValueRange(ivs).drop_back();

    // Earlier stages' tiles, read back from their stacks.
    for (int64_t i : crossing) {
      const Tile &tile = tiles[i];
      int64_t first = stage.begin, last = stage.end;
      if (stageOf(tile.def) >= int64_t(k) ||
          llvm::none_of(tile.uses, [&](int64_t u) {
            return u < end && u >= first && u < last;
          }))
        continue;
      auto type = cast<RankedTensorType>(tile.value.getType());
      RankedTensorType rows = stackedType(type, stackElement(i));
      StackRows at = chunkRows(b, loc, outerIvs, ivs.back(), rows);
      Value read = tensor::ExtractSliceOp::create(
          b, loc, rows, stackOf.lookup(tile.value), at.offsets, at.sizes,
          at.strides);
      read = convertElements(b, loc, read, type.getElementType());
      if (type.getRank() > 2)
        read = tensor::ExpandShapeOp::create(b, loc, type, read,
                                             asRows(type.getRank()));
      mapping.map(tile.value, read);
    }

    // The recomputed ops and views this stage reads, with its own ops, in
    // the body's order.
    llvm::DenseSet<Operation *> needed;
    llvm::SmallVector<Value> worklist;
    for (int64_t at = stage.begin; at < stage.end; ++at)
      llvm::append_range(worklist, valuesRead(computed[at]));
    for (int64_t w : written)
      llvm::append_range(worklist, valuesRead(writes[w]));
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val().getDefiningOp();
      if (!def || !(recomputed.contains(def) || derived.contains(def)) ||
          !needed.insert(def).second)
        continue;
      llvm::append_range(worklist, valuesRead(def));
    }
    for (Operation &op : body->without_terminator()) {
      auto at = position.find(&op);
      if (needed.contains(&op) ||
          (at != position.end() && at->second >= stage.begin &&
           at->second < stage.end))
        b.clone(op, mapping);
    }

    // Stacks, then outputs.
    llvm::SmallVector<std::pair<Value, StackRows>> stores;
    for (int64_t i : exported) {
      auto type = cast<RankedTensorType>(tiles[i].value.getType());
      Value value = mapping.lookup(tiles[i].value);
      if (type.getRank() > 2)
        value = tensor::CollapseShapeOp::create(b, loc, value,
                                                asRows(type.getRank()));
      value = convertElements(b, loc, value, stackElement(i));
      stores.push_back({value, chunkRows(b, loc, outerIvs, ivs.back(),
                                         stackedType(type, stackElement(i)))});
    }
    b.setInsertionPointToEnd(staged.getTerminator().getBody());
    for (auto [j, store] : llvm::enumerate(stores))
      tensor::ParallelInsertSliceOp::create(
          b, loc, store.first, staged.getRegionIterArgs()[j],
          store.second.offsets, store.second.sizes, store.second.strides);
    for (int64_t w : written)
      b.clone(*writes[w], mapping);

    for (auto [j, i] : llvm::enumerate(exported))
      stackOf[tiles[i].value] = staged.getResult(j);
    for (auto [j, w] : llvm::enumerate(written))
      results[outputIndex(writes[w])] = staged.getResult(exported.size() + j);
  }
  forall.replaceAllUsesWith(results);
  forall.erase();
}

std::string Fission::summary() const {
  std::string stageList;
  for (auto [k, stage] : llvm::enumerate(stages))
    stageList += llvm::formatv("{0}{1} products ({2} live bytes)",
                               k ? ", " : "", stage.products, stage.peak)
                     .str();
  int64_t stackBytes = 0;
  for (int64_t i : crossing)
    stackBytes +=
        bytesOf(tiles[i].value.getType()) / (inBF16.contains(i) ? 2 : 1);
  return llvm::formatv("hla-fission-chunk-passes: {0} stages: {1}; {2} tiles "
                       "stacked ({3} in bf16), {4} bytes a chunk",
                       stages.size(), stageList, crossing.size(), inBF16.size(),
                       stackBytes)
      .str();
}

class FissionChunkPasses
    : public hla::impl::HLAFissionChunkPassesPassBase<FissionChunkPasses> {
public:
  using HLAFissionChunkPassesPassBase::HLAFissionChunkPassesPassBase;

  void runOnOperation() override {
    for (scf::ForallOp forall : outermostForalls(getOperation())) {
      Fission fission(forall, maxLiveBytes, bf16Operands);
      if (!fission.analyse())
        continue;
      if (report)
        forall.emitRemark(fission.summary());
      fission.rewrite();
    }
  }
};

} // namespace
