//===- PlaceTiles.cpp - Where each chunk tile lives -------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The placement step of hla-gpu-lower-register-tiles: walks a fused-form
// (sequence, head) loop on tensors in program order and gives every value a
// Placement (RegisterTiles.h). Contraction results are fragments; an
// elementwise op is a fragment when it reads one, else an on-demand tile;
// each contraction operand gets a shared-memory copy in the orientation
// the contraction reads it. Anything else refuses the loop, with the reason.
//
//===----------------------------------------------------------------------===//

#include "../Transforms/TransformUtils.h"
#include "ChunkLoopMapper.h"
#include "RegisterTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

/// Whether `op`'s body yields `out ⊕ f(inputs)` with ⊕ an op `isFold`
/// accepts and f not reading `out` (read once): partial folds combine in
/// any order.
static bool foldsOnce(linalg::GenericOp op,
                      llvm::function_ref<bool(Operation *)> isFold) {
  Block &body = op.getRegion().front();
  Operation *fold = body.getTerminator()->getOperand(0).getDefiningOp();
  Value out = body.getArguments().back();
  if (!fold || !isFold(fold) || fold->getNumOperands() != 2 ||
      (fold->getOperand(0) != out && fold->getOperand(1) != out))
    return false;
  Value term =
      fold->getOperand(0) == out ? fold->getOperand(1) : fold->getOperand(0);
  // The term must not read the running value.
  llvm::SmallVector<Value> work = {term};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (v == out)
      return false;
    if (Operation *def = v.getDefiningOp(); def && def->getBlock() == &body)
      llvm::append_range(work, def->getOperands());
  }
  return out.hasOneUse();
}

bool mlir::hla::gpumap::isSum(linalg::GenericOp op) {
  return foldsOnce(op,
                   [](Operation *fold) { return isa<arith::AddFOp>(fold); });
}

namespace {

class Placer {
public:
  Placer(scf::ForallOp forall, TilePlan &plan, std::string &why,
         ExtraLandings extra)
      : forall(forall), plan(plan), why(why), extra(extra) {}

  LogicalResult run();

private:
  LogicalResult refuse(Operation *op, const llvm::Twine &reason) {
    why = (op->getName().getStringRef() + ": " + reason).str();
    return failure();
  }
  /// The placement of an operand (values from outside the loop included),
  /// or nullopt for one a kernel cannot take.
  std::optional<Placement> of(Value v);
  LogicalResult placeBlock(Block &block);
  LogicalResult placeOp(Operation *op);
  LogicalResult placeGeneric(linalg::GenericOp op);
  LogicalResult placeContraction(linalg::GenericOp op,
                                 const ContractionDims &dims);
  LogicalResult placeLoop(scf::ForOp loop);
  LogicalResult placeReduction(linalg::GenericOp op);
  LogicalResult placeIf(scf::IfOp op);
  void stage(Value tile);
  /// Gives fragment `tile` an exact copy (TilePlan::Staged).
  void stageExact(Value tile);
  /// Registers `buffers` landing buffers (2: a chunk ahead, 1: before the
  /// work) for the rows `tokens` reads into `tile`.
  void land(Operation *tokens, RankedTensorType tile, int64_t buffers,
            bool f32 = false);
  LogicalResult placeThreadReduction(linalg::GenericOp op);
  LogicalResult placeVectorReduction(linalg::GenericOp op);
  /// Whether `loop` reads tokens or stacks (a chunk loop, not a loop over
  /// tiles read before it: LinSimp's anchor window).
  bool readsTokens(scf::ForOp loop);
  /// A vector op (one loop, no reduction): on-demand where its inputs are,
  /// a row vector where it reads one.
  LogicalResult placeVectorOp(linalg::GenericOp op);
  /// Gives `op` the scratch converting `vectors` row or column vectors it
  /// reads in the other orientation.
  void convertVectors(linalg::GenericOp op, int64_t vectors);
  /// Whether a vector of `type` can be a row vector.
  static bool rowVectorShape(Type type) {
    auto t = dyn_cast<RankedTensorType>(type);
    return t && t.getRank() == 1 && t.hasStaticShape() &&
           t.getDimSize(0) % kFragmentRows == 0 &&
           t.getDimSize(0) <= kMaxFragmentRows;
  }
  /// Whether a tile of `type` can be a fragment.
  static bool fragmentShape(Type type) {
    auto t = dyn_cast<RankedTensorType>(type);
    return t && t.getRank() == 2 && t.hasStaticShape() &&
           t.getDimSize(0) % kFragmentRows == 0 &&
           t.getDimSize(0) <= kMaxFragmentRows && t.getDimSize(1) % 8 == 0 &&
           t.getDimSize(1) >= 8 && t.getDimSize(1) <= 256;
  }
  /// Whether tile `v` is a contraction's operand and also folded into a row
  /// vector (a row's sum of squares) by other ops of its block. Such a tile
  /// is computed once into a fragment: its operand copy is then written from
  /// registers, and the folds read them; left on demand, the copy and every
  /// fold would each compute the whole tile again (LinSimp's composite
  /// queries q ⊙ r: their norms and their projection's operand). Tiles read
  /// only elementwise stay on demand: their copies load eight elements at
  /// once.
  static bool foldedAndMultiplied(Value v);
  /// Whether elementwise `op`, which reads tiles on demand (from memory),
  /// is read only by elementwise ops inside a loop of its block, in its
  /// own order. Computed once into a fragment before the loop, it is not
  /// loaded and converted again at every iteration (LinSimp's scaled
  /// queries, read at every anchor offset); its registers count toward the
  /// loop body's peak (orderForRegisterPressure).
  bool invariantInLoops(linalg::GenericOp op);

  /// The stacked tiles (extract_slice ops) copied before the work of a
  /// pass with no loop, within extra.passStackBytes.
  void chooseLandedStacks();

  scf::ForallOp forall;
  TilePlan &plan;
  std::string &why;
  ExtraLandings extra;
  llvm::SmallPtrSet<Operation *, 8> landedStacks;
};

} // namespace

/// Whether `v` is a function's 2-D static argument widened elementwise
/// (extf) by a linalg.generic outside any loop.
bool mlir::hla::gpumap::isWidenedArgument(Value v) {
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || !isa<FunctionOpInterface>(generic->getParentOp()) ||
      generic.getNumDpsInputs() != 1 || generic.getNumReductionLoops() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  auto arg = dyn_cast<BlockArgument>(generic.getDpsInputOperand(0)->get());
  auto type = dyn_cast<RankedTensorType>(v.getType());
  Block &body = generic.getRegion().front();
  auto widen =
      body.getTerminator()->getOperand(0).getDefiningOp<arith::ExtFOp>();
  return arg && isa<FunctionOpInterface>(arg.getOwner()->getParentOp()) &&
         type && type.getRank() == 2 && type.hasStaticShape() && widen &&
         widen.getIn() == body.getArgument(0);
}

std::optional<Placement> Placer::of(Value v) {
  auto it = plan.placement.find(v);
  if (it != plan.placement.end())
    return it->second;
  if (forall.getRegion().isAncestor(v.getParentRegion()))
    return std::nullopt; // defined inside by an op not placed
  if (!isa<TensorType>(v.getType())) {
    // Scalars from outside: constants (cloned into the kernel).
    if (Operation *def = v.getDefiningOp();
        def && def->hasTrait<OpTrait::ConstantLike>())
      return Placement::Scalar;
    return std::nullopt;
  }
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      return Placement::Global;
  // The results of an earlier kernel (the segmented form's run summaries),
  // in global memory by now.
  if (Operation *def = v.getDefiningOp();
      def && isa<scf::ForallOp, bufferization::ToTensorOp>(def) &&
      isa<FunctionOpInterface>(def->getParentOp()))
    return Placement::Global;
  if (auto constant = v.getDefiningOp<arith::ConstantOp>())
    if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
      if (dense.isSplat() && cast<ShapedType>(v.getType()).getRank() == 2)
        return Placement::Expr;
  // A 2-D argument widened to f32 for every loop (LinSimp's Ω): read from
  // the argument where it is needed.
  if (isWidenedArgument(v))
    return Placement::Expr;
  return std::nullopt;
}

/// Whether `slice` reads one f32 state an earlier kernel wrote (a run's
/// summary, the state entering a chunk that the backward's first pass
/// saved, a tile stacked by hla-hoist-chunk-work's pass): a single element,
/// a vector of all of the source's last dimension, or a matrix of static
/// rows at any offset of the source's next-to-last dimension and all of its
/// last, every other dimension a single index. (float32 tokens are a window of
/// the time dimension: they stay exact on the phase mapper.)
static bool isEarlierKernelState(tensor::ExtractSliceOp slice) {
  auto source = cast<RankedTensorType>(slice.getSourceType());
  int64_t rank = source.getRank(), kept = slice.getType().getRank();
  if (isa<BlockArgument>(slice.getSource()) ||
      !source.getElementType().isF32() || !source.hasStaticShape() ||
      !slice.hasUnitStride() || kept > 2 || rank < kept)
    return false;
  llvm::SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  llvm::SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  for (int64_t d = 0; d < rank; ++d) {
    std::optional<int64_t> size = getConstantIntValue(sizes[d]);
    if (d < rank - kept) {
      if (size != 1)
        return false;
    } else if (d == rank - 2) {
      if (!size)
        return false;
    } else if (!isZeroInteger(offsets[d]) || size != source.getDimSize(d)) {
      return false;
    }
  }
  return true;
}

/// How many times a kernel reads each element of `tile` where it is
/// needed: once per elementwise or contraction operand (a contraction's
/// operand is copied into shared memory once), and for a reduction each
/// thread computes for its elements, once per step of the loops its map
/// leaves out (KDA's pair sums read Γ sixteen times an element); through
/// reshapes and slices.
static int64_t stackReads(Value tile) {
  int64_t reads = 0;
  for (OpOperand &use : tile.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
            tensor::ExtractSliceOp>(user)) {
      reads += stackReads(user->getResult(0));
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || matchContraction(generic)) {
      reads += 1;
      continue;
    }
    AffineMap map = generic.getMatchingIndexingMap(&use);
    int64_t steps = 1;
    for (auto [loop, range] : llvm::enumerate(generic.getStaticLoopRanges()))
      if (!map.isFunctionOfDim(loop) && !ShapedType::isDynamic(range))
        steps *= range;
    reads += steps;
  }
  return reads;
}

void Placer::chooseLandedStacks() {
  // (Read fewer times, a tile costs less from global memory than its copy
  // and the barrier after it.)
  constexpr int64_t kMinReads = 4;
  if (extra.passStackBytes <= 0 ||
      !forall.getBody()->getOps<scf::ForOp>().empty())
    return;
  // (reads, program order, slice): the most read first, ties in order.
  llvm::SmallVector<std::tuple<int64_t, int64_t, tensor::ExtractSliceOp>>
      candidates;
  for (auto slice : forall.getBody()->getOps<tensor::ExtractSliceOp>()) {
    RankedTensorType tile = slice.getType();
    Operation *source = slice.getSource().getDefiningOp();
    if (!isEarlierKernelState(slice) || tile.getRank() != 2 ||
        tile.getDimSize(1) % 4 != 0 || !source || forall->isAncestor(source))
      continue;
    if (int64_t reads = stackReads(slice); reads >= kMinReads)
      candidates.push_back({-reads, candidates.size(), slice});
  }
  llvm::sort(candidates, [](const auto &a, const auto &b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                            : std::get<1>(a) < std::get<1>(b);
  });
  int64_t bytes = 0;
  for (auto [negativeReads, order, slice] : candidates) {
    TilePlan::Landing landing{slice, slice.getType().getDimSize(0),
                              slice.getType().getDimSize(1), 0, /*f32=*/true};
    int64_t more = llvm::alignTo(landing.bufferBytes(), int64_t(128));
    if (bytes + more > extra.passStackBytes)
      continue;
    bytes += more;
    landedStacks.insert(slice);
  }
}

/// The token insertion (or stacked tile) whose bf16 values `tile` holds:
/// itself, or its elements widened (exactly) to f32.
static Operation *tokensOf(Value tile) {
  if (auto generic = tile.getDefiningOp<linalg::GenericOp>()) {
    Block &body = generic.getRegion().front();
    auto widen =
        body.getTerminator()->getOperand(0).getDefiningOp<arith::ExtFOp>();
    if (generic.getNumDpsInputs() != 1 || !widen ||
        widen.getIn() != body.getArgument(0) ||
        !llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }))
      return nullptr;
    tile = generic.getDpsInputOperand(0)->get();
  }
  Operation *def = tile.getDefiningOp();
  return isa_and_nonnull<tensor::InsertSliceOp, tensor::ExtractSliceOp>(def)
             ? def
             : nullptr;
}

/// Whether the value `loop` yields for its carried value `i` is made from
/// a reduction of a tile's columns (through copies and vector ops).
static bool yieldsColumnVector(scf::ForOp loop, unsigned i) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  llvm::SmallVector<Value> work = {yield.getOperand(i)};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto copy = v.getDefiningOp<linalg::CopyOp>()) {
      work.push_back(copy.getInputs()[0]);
      continue;
    }
    auto generic = v.getDefiningOp<linalg::GenericOp>();
    if (!generic || generic->getBlock() != loop.getBody())
      continue;
    if (generic.getNumLoops() == 1) {
      for (Value in : generic.getDpsInputs())
        work.push_back(in);
      continue;
    }
    AffineMap out =
        generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
    if (generic.getNumLoops() != 2 || generic.getNumReductionLoops() != 1 ||
        out.getNumResults() != 1 || !out.isProjectedPermutation())
      continue;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      AffineMap map = generic.getMatchingIndexingMap(input);
      if (map.getNumResults() == 2 && map.isProjectedPermutation() &&
          map.getDimPosition(1) == out.getDimPosition(0))
        return true;
    }
  }
  return false;
}

bool Placer::readsTokens(scf::ForOp loop) {
  bool found = false;
  loop.walk([&](tensor::ExtractSliceOp slice) {
    found |= of(slice.getSource()) == Placement::Global;
  });
  return found;
}

void Placer::stage(Value tile) {
  if (plan.stagedIndex(tile))
    return;
  auto type = cast<RankedTensorType>(tile.getType());
  TilePlan::Staged copy{tile, type.getDimSize(0), type.getDimSize(1),
                        plan.sharedBytes, std::nullopt};
  if (Operation *tokens = tokensOf(tile))
    for (auto [i, l] : llvm::enumerate(plan.landing))
      if (l.tokens == tokens && !l.f32)
        copy.landing = i;
  plan.staged.push_back(copy);
  plan.sharedBytes += llvm::alignTo(copy.bytes(), 128);
}

void Placer::land(Operation *tokens, RankedTensorType tile, int64_t buffers,
                  bool f32) {
  TilePlan::Landing landing{
      tokens, tile.getDimSize(0), tile.getDimSize(1), plan.sharedBytes, f32,
      buffers};
  plan.landing.push_back(landing);
  plan.sharedBytes += llvm::alignTo(landing.bytes(), int64_t(128));
}

void Placer::stageExact(Value tile) {
  if (plan.stagedIndex(tile, /*exact=*/true))
    return;
  auto type = cast<RankedTensorType>(tile.getType());
  TilePlan::Staged copy{
      tile,         type.getDimSize(0), type.getDimSize(1), plan.sharedBytes,
      std::nullopt, /*exact=*/true};
  plan.staged.push_back(copy);
  plan.sharedBytes += llvm::alignTo(copy.bytes(), 128);
}

/// A reduction into a 2-D tile that is not a contraction (KDA's pair sums
/// with the decay between two tokens inside the sum): each thread computes
/// its own elements of the result fragment, looping over the reduced
/// dimensions; it reads on-demand operands where they are, fragments from
/// their exact copies.
LogicalResult Placer::placeThreadReduction(linalg::GenericOp op) {
  auto out = cast<RankedTensorType>(op.getResult(0).getType());
  if (!fragmentShape(out))
    return refuse(op, "a reduction into a tile that is not 64 to 256 rows by "
                      "8 to 256 columns");
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!outMap.isProjectedPermutation() || outMap.getNumResults() != 2)
    return refuse(op, "a reduction whose result is not indexed by two of "
                      "its loops");
  for (OpOperand &operand : op->getOpOperands()) {
    // (An input never read gives a loop its range: hla's flattened tiles'
    // window operands.)
    if (op.getMatchingBlockArgument(&operand).use_empty())
      continue;
    std::optional<Placement> p = of(operand.get());
    if (p == Placement::ScalarTensor)
      continue;
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || type.getRank() > 2 ||
        (p != Placement::Expr && p != Placement::Frag))
      return refuse(op, "a reduction reading other than tiles and vectors");
    if (*p == Placement::Frag) {
      if (op.isDpsInit(&operand))
        return refuse(op, "a reduction into a fragment");
      stageExact(operand.get());
    }
  }
  ++plan.threadReductions;
  plan.placement[op.getResult(0)] = Placement::Frag;
  return success();
}

LogicalResult Placer::placeContraction(linalg::GenericOp op,
                                       const ContractionDims &dims) {
  auto out = cast<RankedTensorType>(op.getResult(0).getType());
  if (!fragmentShape(out))
    return refuse(op, "a contraction whose result is not 64 to 256 rows (a "
                      "multiple of 64) by 8 to 256 columns (a multiple of 8)");
  if (dims.sizeK % 16)
    return refuse(op, "a contraction over a length that is not a multiple "
                      "of 16");
  // The fragment's rows are C's first dimension, its columns the second.
  AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  unsigned mLoop = mapC.getDimPosition(0), nLoop = mapC.getDimPosition(1);
  for (OpOperand *input : op.getDpsInputOperands()) {
    std::optional<Placement> p = of(input->get());
    // A whole 2-D tensor of global memory (LinSimp's Ω as f32, converted by
    // a kernel of its own) is copied like an on-demand tile.
    auto type = cast<RankedTensorType>(input->get().getType());
    bool wholeGlobal =
        p == Placement::Global && type.getRank() == 2 && type.hasStaticShape();
    if (!p || (*p != Placement::Expr && *p != Placement::Frag && !wholeGlobal))
      return refuse(op, "a contraction operand that is not a tile");
    AffineMap map = op.getMatchingIndexingMap(input);
    bool isA = map.isFunctionOfDim(mLoop);
    if (isA == map.isFunctionOfDim(nLoop))
      return refuse(op, "a contraction operand of both or neither of C's "
                        "dimensions");
    if (cast<RankedTensorType>(input->get().getType()).getDimSize(1) % 8)
      return refuse(op, "a contraction operand whose columns are not whole "
                        "8-column groups");
    stage(input->get());
  }
  std::optional<Placement> init = of(op.getDpsInitOperand(0)->get());
  if (!init || (*init != Placement::Expr && *init != Placement::Frag))
    return refuse(op, "a contraction accumulating into a non-tile");
  ++plan.contractions;
  plan.placement[op.getResult(0)] = Placement::Frag;
  return success();
}

bool Placer::foldedAndMultiplied(Value v) {
  if (!fragmentShape(v.getType()))
    return false;
  bool product = false, rowFold = false;
  for (OpOperand &use : v.getUses()) {
    auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!reader || reader->getBlock() != v.getParentBlock() ||
        reader.isDpsInit(&use))
      return false;
    if (matchContraction(reader)) {
      product = true;
      continue;
    }
    // A fold of rows reading it where its fragment's elements are.
    AffineMap map = reader.getMatchingIndexingMap(&use);
    if (reader.getNumLoops() != 2 || reader.getNumReductionLoops() != 1 ||
        !map.isIdentity() ||
        reader.getIteratorTypesArray()[1] != utils::IteratorType::reduction)
      return false;
    rowFold = true;
  }
  return product && rowFold;
}

bool Placer::invariantInLoops(linalg::GenericOp op) {
  Value v = op.getResult(0);
  if (!fragmentShape(v.getType()) || v.use_empty())
    return false;
  bool readsMemory = llvm::any_of(op.getDpsInputs(), [&](Value input) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    return type && type.getRank() == 2 && of(input) == Placement::Expr;
  });
  if (!readsMemory)
    return false;
  for (OpOperand &use : v.getUses()) {
    auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!reader || reader.isDpsInit(&use) || matchContraction(reader) ||
        reader.getNumLoops() != reader.getNumParallelLoops() ||
        reader.getMatchingIndexingMap(&use) !=
            reader.getMatchingIndexingMap(reader.getDpsInitOperand(0)) ||
        !isInLoopOutside(reader, op))
      return false;
  }
  return true;
}

LogicalResult Placer::placeGeneric(linalg::GenericOp op) {
  for (Operation &inner : op.getRegion().front().without_terminator())
    if (inner.getNumRegions() || !isMemoryEffectFree(&inner))
      return refuse(op, "a body op with regions or memory effects");
  if (op.getNumResults() != 1)
    return refuse(op, "more than one result");
  if (op.getNumLoops() == 0) {
    // 0-d arithmetic (a decay's running product): a scalar every thread
    // computes.
    for (OpOperand &operand : op->getOpOperands()) {
      bool read = !op.isDpsInit(&operand) ||
                  !op.getMatchingBlockArgument(&operand).use_empty();
      if (read && of(operand.get()) != Placement::ScalarTensor)
        return refuse(op, "0-d arithmetic on other than 0-d values");
    }
    plan.placement[op.getResult(0)] = Placement::ScalarTensor;
    return success();
  }
  if (std::optional<ContractionDims> dims = matchContraction(op))
    return placeContraction(op, *dims);
  if (op.getNumReductionLoops() == op.getNumLoops() &&
      cast<RankedTensorType>(op.getResult(0).getType()).getRank() == 0)
    return placeReduction(op);
  if (op.getNumLoops() == 2 && op.getNumReductionLoops() == 1 &&
      cast<RankedTensorType>(op.getResult(0).getType()).getRank() == 1)
    return placeVectorReduction(op);
  if (op.getNumReductionLoops() != 0)
    return placeThreadReduction(op);
  if (op.getNumLoops() == 1)
    return placeVectorOp(op);
  if (op.getNumLoops() != 2)
    return refuse(op, "an elementwise op of more than two dimensions");
  // Row and column vectors read in the other orientation.
  int64_t across = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (type && type.getRank() == 0 &&
        of(operand.get()) == Placement::ScalarTensor)
      continue;
    // Row and column vectors, broadcast.
    if (type && type.getRank() == 1 && type.hasStaticShape() &&
        of(operand.get()) == Placement::Expr && !op.isDpsInit(&operand) &&
        op.getMatchingIndexingMap(&operand).isProjectedPermutation())
      continue;
    // A row vector along the output's rows, a column vector along its
    // columns.
    if (of(operand.get()) == Placement::RowVector ||
        of(operand.get()) == Placement::ColVector) {
      AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
      unsigned along = of(operand.get()) == Placement::RowVector ? 0 : 1;
      if (op.isDpsInit(&operand))
        return refuse(op, "a row or column vector as an output");
      // Read across (a row vector broadcast along the columns), converted.
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (map != outMap.getSubMap(llvm::ArrayRef<unsigned>{along})) {
        if (map != outMap.getSubMap(llvm::ArrayRef<unsigned>{1 - along}))
          return refuse(op, "a row or column vector read through another map");
        ++across;
      }
      continue;
    }
    // A tile read through a map of its own (a narrower tile repeated:
    // KDA's band of pairs within blocks of tokens).
    if (type && type.getRank() == 2 && type.hasStaticShape() &&
        !op.isDpsInit(&operand) &&
        op.getMatchingIndexingMap(&operand).getNumResults() == 2 &&
        !op.getMatchingIndexingMap(&operand).isPermutation() &&
        (of(operand.get()) == Placement::Expr ||
         of(operand.get()) == Placement::Frag))
      continue;
    if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
        !op.getMatchingIndexingMap(&operand).isPermutation())
      return refuse(op, "an elementwise op on other than whole 2-D tiles");
  }
  if (across)
    convertVectors(op, across);
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  bool readsFragment = false;
  for (OpOperand &operand : op->getOpOperands()) {
    if (op.isDpsInit(&operand) &&
        op.getMatchingBlockArgument(&operand).use_empty())
      continue;
    std::optional<Placement> p = of(operand.get());
    if (p == Placement::ScalarTensor)
      continue;
    if (p == Placement::RowVector || p == Placement::ColVector) {
      readsFragment = true;
      continue;
    }
    if (!p || (*p != Placement::Expr && *p != Placement::Frag))
      return refuse(op, "an elementwise op reading a non-tile");
    if (*p == Placement::Frag) {
      readsFragment = true;
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (map != outMap && map.isPermutation())
        return refuse(op, "a fragment read transposed (a layout conversion "
                          "in registers)");
      if (map != outMap)
        stageExact(operand.get());
    }
  }
  if (readsFragment && !fragmentShape(op.getResult(0).getType()))
    return refuse(op, "a fragment that is not 64 to 256 rows by 8 to 256 "
                      "columns");
  plan.placement[op.getResult(0)] =
      readsFragment || foldedAndMultiplied(op.getResult(0)) ||
              invariantInLoops(op)
          ? Placement::Frag
          : Placement::Expr;
  return success();
}

/// Whether `op` folds with `arith.addf` or `arith.maximumf`: a vector
/// reduction's partial folds combine in any order.
static bool isRowFold(linalg::GenericOp op) {
  return foldsOnce(op, [](Operation *fold) {
    return isa<arith::AddFOp, arith::MaximumFOp>(fold);
  });
}

/// A reduction of a tile's rows into a row vector (a row's maximum, sum,
/// sum of squares, product with a column vector), or of its columns into a
/// column vector (a column's sum): each thread folds its own elements of
/// each of its rows or columns; the four threads of a row combine theirs by
/// shuffles, the eight of a column in a warp by shuffles and the four warps
/// through shared memory.
LogicalResult Placer::placeVectorReduction(linalg::GenericOp op) {
  auto result = cast<RankedTensorType>(op.getResult(0).getType());
  if (!isRowFold(op))
    return refuse(op, "a reduction into a vector that is not a sum or a "
                      "maximum");
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!outMap.isProjectedPermutation())
    return refuse(op, "a reduction into a vector not indexed by a loop");
  unsigned outLoop = outMap.getDimPosition(0);
  // The tile's orientation, from its 2-D inputs' maps.
  std::optional<bool> alongRows;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getNumResults() != 2 || !map.isProjectedPermutation())
      continue;
    bool rows = map.getDimPosition(0) == outLoop;
    if (alongRows && *alongRows != rows)
      return refuse(op, "a reduction reading tiles in both orientations");
    alongRows = rows;
  }
  if (!alongRows)
    return refuse(op, "a reduction into a vector reading no tile");
  unsigned rowLoop = *alongRows ? outLoop : 1 - outLoop;
  unsigned colLoop = 1 - rowLoop;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!fragmentShape(RankedTensorType::get({ranges[rowLoop], ranges[colLoop]},
                                           result.getElementType())))
    return refuse(op, "a reduction of a tile that is not 64 to 256 rows by 8 "
                      "to 256 columns");
  MLIRContext *ctx = op.getContext();
  AffineMap fragmentMap = AffineMap::get(
      2, 0, {getAffineDimExpr(rowLoop, ctx), getAffineDimExpr(colLoop, ctx)},
      ctx);
  AffineMap rowMap = fragmentMap.getSubMap(llvm::ArrayRef<unsigned>{0});
  AffineMap colMap = fragmentMap.getSubMap(llvm::ArrayRef<unsigned>{1});
  Placement kind = *alongRows ? Placement::RowVector : Placement::ColVector;
  for (OpOperand &operand : op->getOpOperands()) {
    bool read = !op.isDpsInit(&operand) ||
                !op.getMatchingBlockArgument(&operand).use_empty();
    if (!read)
      continue;
    std::optional<Placement> p = of(operand.get());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (p == Placement::ScalarTensor)
      continue;
    if ((p == Placement::RowVector && map == rowMap) ||
        (p == Placement::ColVector && map == colMap))
      continue;
    // A running value of the other orientation, converted.
    if (op.isDpsInit(&operand) &&
        (p == Placement::RowVector || p == Placement::ColVector) &&
        map.getNumResults() == 1) {
      convertVectors(op, 1);
      continue;
    }
    if (p == Placement::Frag && map == fragmentMap && !op.isDpsInit(&operand))
      continue;
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (p == Placement::Expr && type && type.hasStaticShape() &&
        map.isProjectedPermutation())
      continue;
    return refuse(op, "a reduction into a vector reading other than "
                      "fragments in its orientation, on-demand tiles, row "
                      "and column vectors and scalars");
  }
  if (kind == Placement::RowVector) {
    ++plan.rowReductions;
  } else {
    ++plan.colReductions;
    plan.reductionScratch[op] = plan.sharedBytes;
    plan.sharedBytes += llvm::alignTo(TilePlan::scratchBytes(op), 128);
  }
  plan.placement[op.getResult(0)] = kind;
  return success();
}

int64_t TilePlan::scratchBytes(Operation *op) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  // A column vector's partial sums: one per warp of the warpgroup and
  // column.
  if (type.getRank() == 1)
    return 4 * 4 * type.getDimSize(0);
  return 128;
}

void Placer::convertVectors(linalg::GenericOp op, int64_t vectors) {
  TilePlan::Conversions scratch{plan.sharedBytes, vectors};
  plan.conversionScratch[op] = scratch;
  plan.sharedBytes += llvm::alignTo(scratch.bytes(), 128);
}

LogicalResult Placer::placeVectorOp(linalg::GenericOp op) {
  std::optional<Placement> kind;
  int64_t converts = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    bool read = !op.isDpsInit(&operand) ||
                !op.getMatchingBlockArgument(&operand).use_empty();
    if (!type || !type.hasStaticShape() || type.getRank() > 1)
      return refuse(op, "a vector op on other than vectors");
    if (!read)
      continue;
    std::optional<Placement> p = of(operand.get());
    if (p == Placement::RowVector || p == Placement::ColVector) {
      // Vectors of the other orientation (KDA's backward adds a row sum of
      // its state's cotangent to a column sum of token tiles) are converted
      // through shared memory (the op's scratch).
      if (kind && kind != p)
        ++converts;
      if (!kind)
        kind = p;
      continue;
    }
    if (p != Placement::Expr && p != Placement::ScalarTensor)
      return refuse(op, "a vector op on other than on-demand, row and column "
                        "vectors");
  }
  if (kind && (!rowVectorShape(op.getResult(0).getType()) ||
               !llvm::all_of(op.getIndexingMapsArray(),
                             [](AffineMap m) { return m.isIdentity(); })))
    return refuse(op, "a row or column vector op not element by element");
  if (converts)
    convertVectors(op, converts);
  // A vector of on-demand values (decay powers of a chunk's tokens), or of
  // rows' or columns' values.
  plan.placement[op.getResult(0)] = kind.value_or(Placement::Expr);
  return success();
}

/// A reduction of whole tiles to one value: on-demand tiles or vectors (any
/// body: one thread folds them when it is not a sum) or fragments (sums
/// only: each thread folds its elements, the block adds the partial sums).
LogicalResult Placer::placeReduction(linalg::GenericOp op) {
  if (op.getNumLoops() != 2 && op.getNumLoops() != 1)
    return refuse(op, "a reduction of other than vectors or 2-D tiles");
  bool fragments = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    std::optional<Placement> p = of(input->get());
    if (op.getNumLoops() == 1 && p != Placement::Expr)
      return refuse(op, "a reduction of a vector that is not on-demand");
    if ((p != Placement::Expr && p != Placement::Frag) ||
        !op.getMatchingIndexingMap(input).isPermutation())
      return refuse(op, "a reduction of other than whole tiles");
    fragments |= p == Placement::Frag;
  }
  if (of(op.getDpsInitOperand(0)->get()) != Placement::ScalarTensor)
    return refuse(op, "a reduction into an unknown value");
  // Other folds (causal isolation's search for the first non-finite
  // token, a rare path) are one thread's, reading fragments from exact
  // copies.
  if (fragments && !isSum(op))
    for (OpOperand *input : op.getDpsInputOperands())
      if (of(input->get()) == Placement::Frag)
        stageExact(input->get());
  plan.reductionScratch[op] = plan.sharedBytes;
  plan.sharedBytes += TilePlan::scratchBytes(op);
  plan.placement[op.getResult(0)] = Placement::ScalarTensor;
  return success();
}

/// A branch on a scalar whose results are scalars or fragment tiles (causal
/// isolation's second readout of a chunk holding a non-finite token).
LogicalResult Placer::placeIf(scf::IfOp op) {
  if (of(op.getCondition()) != Placement::Scalar)
    return refuse(op, "a condition computed by ops not placed");
  for (Region *region : {&op.getThenRegion(), &op.getElseRegion()})
    if (!region->empty() && failed(placeBlock(region->front())))
      return failure();
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    if (!isa<TensorType>(result.getType())) {
      plan.placement[result] = Placement::Scalar;
      continue;
    }
    if (!fragmentShape(result.getType()))
      return refuse(op, "a tile result that is not 64 to 256 rows by 8 to "
                        "256 columns");
    for (Block *block : {op.thenBlock(), op.elseBlock()}) {
      std::optional<Placement> p =
          of(cast<scf::YieldOp>(block->getTerminator()).getOperand(i));
      if (p != Placement::Frag && p != Placement::Expr)
        return refuse(op, "a yielded value that is not a tile");
    }
    plan.placement[result] = Placement::Frag;
  }
  return success();
}

LogicalResult Placer::placeLoop(scf::ForOp loop) {
  for (Value bound :
       {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
    if (of(bound) != Placement::Scalar)
      return refuse(loop, "bounds computed by ops not placed");
  plan.placement[loop.getInductionVar()] = Placement::Scalar;
  for (auto [init, arg, result] : llvm::zip(
           loop.getInitArgs(), loop.getRegionIterArgs(), loop.getResults())) {
    if (!isa<TensorType>(init.getType()))
      return refuse(loop, "a non-tensor loop-carried value");
    std::optional<Placement> p = of(init);
    if (p == Placement::Rows) {
      plan.placement[arg] = plan.placement[result] = Placement::Rows;
      plan.rowsSlice[arg] = plan.rowsSlice[result] = plan.rowsSlice[init];
      continue;
    }
    if (p == Placement::ScalarTensor) {
      plan.placement[arg] = plan.placement[result] = Placement::ScalarTensor;
      continue;
    }
    // A vector of 64 to 256 values: a column vector where the loop yields
    // one made from a column reduction (LinSimp's a), else a row vector (a
    // running maximum or sum of each row); its readers check that they read
    // it so.
    if ((p == Placement::Expr || p == Placement::RowVector ||
         p == Placement::ColVector) &&
        rowVectorShape(init.getType())) {
      unsigned i = cast<BlockArgument>(arg).getArgNumber() - 1;
      Placement kind = p == Placement::ColVector || yieldsColumnVector(loop, i)
                           ? Placement::ColVector
                           : Placement::RowVector;
      // (An initial vector in the other orientation would need converting
      // through shared memory on entry: not done.)
      if (p == Placement::RowVector && kind == Placement::ColVector)
        return refuse(loop, "a carried column vector whose initial value is "
                            "a row vector");
      plan.placement[arg] = plan.placement[result] = kind;
      continue;
    }
    if ((p != Placement::Expr && p != Placement::Frag) ||
        !fragmentShape(init.getType()))
      return refuse(loop, "a carried tensor that is neither output rows, a "
                          "0-d value, a row vector nor a tile of 64 to 256 "
                          "rows");
    plan.placement[arg] = plan.placement[result] = Placement::Frag;
  }
  if (failed(placeBlock(*loop.getBody())))
    return failure();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [value, arg] :
       llvm::zip(yield.getOperands(), loop.getRegionIterArgs())) {
    std::optional<Placement> p = of(value);
    Placement carried = plan.of(arg);
    if (carried == Placement::Rows
            ? p != Placement::Rows ||
                  plan.rowsSlice[value] != plan.rowsSlice[arg]
        : carried == Placement::ScalarTensor ? p != Placement::ScalarTensor
        : carried == Placement::RowVector || carried == Placement::ColVector
            ? p != carried && p != Placement::Expr
            : p != Placement::Frag && p != Placement::Expr)
      return refuse(loop, "a carried value that changes placement");
  }
  return success();
}

LogicalResult Placer::placeOp(Operation *op) {
  auto operandPlacements = [&]() -> bool {
    return llvm::all_of(op->getOperands(),
                        [&](Value v) { return of(v).has_value(); });
  };
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return placeGeneric(generic);
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return placeLoop(loop);
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return placeIf(branch);
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    if (of(extract.getTensor()) != Placement::ScalarTensor)
      return refuse(op, "an element read of a tensor that is not 0-d");
    plan.placement[extract] = Placement::Scalar;
    return success();
  }
  if (auto scalarTensor = dyn_cast<tensor::FromElementsOp>(op)) {
    if (scalarTensor.getType().getRank() != 0 ||
        of(scalarTensor.getElements()[0]) != Placement::Scalar)
      return refuse(op, "a tensor built of elements");
    plan.placement[scalarTensor] = Placement::ScalarTensor;
    return success();
  }
  if (isa<tensor::EmptyOp>(op)) {
    plan.placement[op->getResult(0)] = Placement::Empty;
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(fill.getResult(0).getType());
    if (type && type.getRank() == 0 && of(fill.value()) == Placement::Scalar) {
      plan.placement[fill.getResult(0)] = Placement::ScalarTensor;
      return success();
    }
    if (!type || (type.getRank() != 1 && type.getRank() != 2) ||
        !type.hasStaticShape() || of(fill.value()) != Placement::Scalar)
      return refuse(op, "a fill of other than a vector or a 2-D tile");
    plan.placement[fill.getResult(0)] = Placement::Expr;
    return success();
  }
  if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
    std::optional<Placement> p = of(copy.getInputs()[0]);
    if (p != Placement::Frag && p != Placement::Expr &&
        p != Placement::ScalarTensor && p != Placement::RowVector &&
        p != Placement::ColVector)
      return refuse(op, "a copy of a non-tile");
    plan.placement[copy.getResult(0)] = *p;
    return success();
  }
  if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op)) {
    // One f32 element of a tensor in device memory (a head's decay rate):
    // every thread reads it.
    if (of(extract.getSource()) == Placement::Global &&
        extract.getType().getRank() == 0 &&
        extract.getType().getElementType().isF32()) {
      plan.placement[extract] = Placement::ScalarTensor;
      return success();
    }
    if (of(extract.getSource()) == Placement::Global &&
        isEarlierKernelState(extract)) {
      // Read where it is needed (a run's decay: by every thread).
      plan.placement[extract] = extract.getType().getRank() == 0
                                    ? Placement::ScalarTensor
                                    : Placement::Expr;
      // With land-f32-stacks, in a chunk loop, such a tile (a chunk's of
      // hla-hoist-chunk-work's stacks: KDA's U) is copied a chunk ahead,
      // row-major, rather than read from global memory inside the state's
      // chain. (Off by default: the segmented form's run summaries and the
      // backward's states, read the same way, have not been measured so.)
      RankedTensorType tile = extract.getType();
      if (extra.f32Stacks && isa<scf::ForOp>(extract->getParentOp()) &&
          tile.getRank() == 2 && tile.getDimSize(1) % 4 == 0) {
        land(extract, tile, /*buffers=*/2, /*f32=*/true);
      }
      // In a pass with no loop, the tiles read most (KDA's Γ in its
      // gradients' last stage: by each step of its pair sums and by most
      // of its terms) are copied before the work: read again and again
      // from global memory they miss in L1.
      if (landedStacks.contains(extract))
        land(extract, tile, /*buffers=*/1, /*f32=*/true);
      return success();
    }
    std::optional<Placement> p = of(extract.getSource());
    // A vector of one value per token (KDA's β), read where it is needed.
    if (p == Placement::Global && extract.hasUnitStride() &&
        extract.getType().getRank() == 1 &&
        extract.getType().getElementType().isBF16()) {
      plan.placement[extract] = extract.getType().hasStaticShape()
                                    ? Placement::Expr
                                    : Placement::GlobalSlice;
      return success();
    }
    // One row of a fragment as a vector (KDA's Γ at a reference token),
    // read from its exact copy.
    if (p == Placement::Frag && extract.hasUnitStride() &&
        extract.getType().getRank() == 1 &&
        extract.getSourceType().getRank() == 2 &&
        extract.getDroppedDims().test(0)) {
      stageExact(extract.getSource());
      plan.placement[extract] = Placement::Expr;
      return success();
    }
    // One row of an on-demand tile as a vector (KDA's Γ at a reference
    // token, where an earlier kernel stacked Γ): read where it is needed.
    if (p == Placement::Expr && extract.hasUnitStride() &&
        extract.getType().getRank() == 1 &&
        extract.getSourceType().getRank() == 2 &&
        extract.getType().hasStaticShape() &&
        extract.getDroppedDims().test(0)) {
      plan.placement[extract] = Placement::Expr;
      return success();
    }
    // A window of an on-demand tile or vector (LinSimp's anchor rows of one
    // offset, from the chunk's rows and the halo before it): read where it
    // is needed, at the window's offset.
    if (p == Placement::Expr && extract.hasUnitStride() &&
        !llvm::all_of(extract.getMixedOffsets(),
                      [](OpFoldResult o) { return isZeroInteger(o); }) &&
        extract.getType().hasStaticShape() &&
        extract.getType().getRank() == extract.getSourceType().getRank()) {
      plan.placement[extract] = Placement::Expr;
      return success();
    }
    // A vector's leading values, about to be written into a 1-D output
    // (KDA's dβ of a chunk).
    if ((p == Placement::RowVector || p == Placement::ColVector) &&
        extract.hasUnitStride() && extract.getType().getRank() == 1 &&
        isZeroInteger(extract.getMixedOffsets()[0])) {
      plan.placement[extract] = Placement::Prefix;
      return success();
    }
    if (p == Placement::Rows) {
      // A slice of a shared output stands for itself; a slice of a slice
      // is not written (rows go in by insertion).
      if (!llvm::is_contained(forall.getRegionIterArgs(), extract.getSource()))
        return refuse(op, "a slice of output rows");
      if (!extract.hasUnitStride() || extract.getType().getRank() > 2)
        return refuse(op, "a strided slice of output rows, or not of rows");
      plan.placement[extract] = Placement::Rows;
      plan.rowsSlice[extract] = extract;
      return success();
    }
    if (!extract.hasUnitStride() || extract.getType().getRank() != 2)
      return refuse(op, "a strided or non-2-D slice");
    if (p == Placement::Global) {
      Type element = extract.getType().getElementType();
      if (!element.isBF16())
        return refuse(op, "a slice of a tensor that is not bf16 (float32 "
                          "tokens keep exact float32 arithmetic on the phase "
                          "mapper; initial states are not read into "
                          "fragments yet)");
      if (extract.getType().isDynamicDim(1))
        return refuse(op, "token tiles of a dynamic width");
      // A whole static tile of tokens is read where it is needed; rows of a
      // dynamic count go into a zero tile first.
      plan.placement[extract] = extract.getType().hasStaticShape()
                                    ? Placement::Expr
                                    : Placement::GlobalSlice;
      // In a chunk loop, a whole tile of an earlier kernel's stack (what
      // hla-hoist-chunk-work's pass computed for the chunk) is copied a
      // chunk ahead, like token rows.
      RankedTensorType tile = extract.getType();
      if (isa<scf::ForOp>(extract->getParentOp()) && tile.hasStaticShape() &&
          !isa<BlockArgument>(extract.getSource()) &&
          tile.getDimSize(1) % 8 == 0 && extract.hasUnitStride()) {
        land(extract, tile, /*buffers=*/2);
      }
      return success();
    }
    if ((p == Placement::Frag || p == Placement::Expr) &&
        llvm::all_of(extract.getMixedOffsets(),
                     [](OpFoldResult o) { return isZeroInteger(o); })) {
      plan.placement[extract] = Placement::Prefix;
      return success();
    }
    return refuse(op, "a slice of something other than tokens, output rows "
                      "or a tile's leading rows");
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    std::optional<Placement> src = of(insert.getSource());
    std::optional<Placement> dest = of(insert.getDest());
    auto tokens = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
    bool global = tokens && of(tokens.getSource()) == Placement::Global;
    // A token vector's values into a zero vector: read where needed (no
    // landing buffer: 2 bytes a token).
    if (global && insert.hasUnitStride() &&
        insert.getSourceType().getRank() == 1 && dest == Placement::Expr &&
        isZeroInteger(insert.getMixedOffsets()[0])) {
      plan.placement[insert] = Placement::Expr;
      return success();
    }
    // A column vector (LinSimp's a entering a chunk) as one row of a
    // shared output.
    if (src == Placement::ColVector && dest == Placement::Rows &&
        insert.hasUnitStride() && insert.getDestType().getRank() == 2 &&
        getConstantIntValue(insert.getMixedSizes()[0]) == 1) {
      plan.placement[insert] = Placement::Rows;
      plan.rowsSlice[insert] = plan.rowsSlice[insert.getDest()];
      return success();
    }
    // A row or column vector's leading values as a chunk's rows of a 1-D
    // output.
    if (src == Placement::Prefix && dest == Placement::Rows &&
        insert.hasUnitStride() && insert.getSourceType().getRank() == 1 &&
        insert.getDestType().getRank() == 1) {
      plan.placement[insert] = Placement::Rows;
      plan.rowsSlice[insert] = plan.rowsSlice[insert.getDest()];
      return success();
    }
    if (!insert.hasUnitStride() || insert.getSourceType().getRank() != 2)
      return refuse(op, "a strided or non-2-D slice");
    // (At any row: a chunk's tokens after a halo of earlier ones.)
    if (global && dest == Placement::Expr &&
        isZeroInteger(insert.getMixedOffsets()[1]) &&
        getConstantIntValue(insert.getMixedSizes()[1]) ==
            insert.getDestType().getDimSize(1)) {
      plan.placement[insert] = Placement::Expr;
      // In a chunk loop, rows of 16-byte multiples into a zero tile are
      // copied one chunk ahead (two buffers); in a pass with no chunk loop,
      // into one buffer before the pass's work, so that every read of them
      // is from shared memory.
      auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
      RankedTensorType tile = insert.getDestType();
      bool inLoop = isa<scf::ForOp>(insert->getParentOp());
      bool upFront =
          extra.upFront && insert->getParentOp() == forall.getOperation() &&
          !isa<BlockArgument>(insert.getDest()) &&
          llvm::none_of(forall.getBody()->getOps<scf::ForOp>(),
                        [&](scf::ForOp loop) { return readsTokens(loop); });
      if ((inLoop || upFront) && fill &&
          matchPattern(fill.value(), m_AnyZeroFloat()) &&
          tile.getElementType().isBF16() && tile.getDimSize(1) % 8 == 0) {
        land(insert, tile, /*buffers=*/inLoop ? 2 : 1);
      }
      return success();
    }
    // A whole tile (the state entering a chunk, saved by the backward's
    // first pass) into rows of a shared output.
    if ((src == Placement::Frag || src == Placement::Expr) &&
        dest == Placement::Rows && insert.getSourceType().hasStaticShape() &&
        llvm::equal(insert.getStaticSizes(),
                    insert.getSourceType().getShape()) &&
        fragmentShape(insert.getSourceType())) {
      plan.placement[insert] = Placement::Rows;
      plan.rowsSlice[insert] = plan.rowsSlice[insert.getDest()];
      return success();
    }
    if (src == Placement::Prefix && dest == Placement::Rows) {
      auto prefix = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
      if (prefix.getMixedSizes() != insert.getMixedSizes() ||
          insert.getSourceType().isDynamicDim(1))
        return refuse(op, "output rows that are not a tile's leading rows");
      plan.placement[insert] = Placement::Rows;
      plan.rowsSlice[insert] = plan.rowsSlice[insert.getDest()];
      return success();
    }
    return refuse(op, "an insertion other than token rows into a zero tile, "
                      "a tile's rows into the output or a whole tile into "
                      "output rows");
  }
  if (isa<scf::YieldOp, scf::InParallelOp>(op))
    return success(); // checked by placeLoop and run
  // Scalar code: index arithmetic, chunk bounds.
  if (op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
      llvm::none_of(op->getResultTypes(),
                    [](Type t) { return isa<ShapedType>(t); }) &&
      operandPlacements() && llvm::all_of(op->getOperands(), [&](Value v) {
        return of(v) == Placement::Scalar;
      })) {
    for (Value result : op->getResults())
      plan.placement[result] = Placement::Scalar;
    return success();
  }
  return refuse(op, "an op the register-tile mapping does not place");
}

LogicalResult Placer::placeBlock(Block &block) {
  for (Operation &op : block)
    if (failed(placeOp(&op)))
      return failure();
  return success();
}

LogicalResult Placer::run() {
  for (auto [lb, ub, step] :
       llvm::zip(forall.getMixedLowerBound(), forall.getMixedUpperBound(),
                 forall.getMixedStep()))
    if (!isZeroInteger(lb) || !getConstantIntValue(ub) ||
        getConstantIntValue(step) != 1)
      return refuse(forall, "bounds that are not static from 0, step 1");
  for (Value iv : forall.getInductionVars())
    plan.placement[iv] = Placement::Scalar;
  for (auto [init, arg] :
       llvm::zip(forall.getOutputs(), forall.getRegionIterArgs())) {
    if (!init.getDefiningOp<tensor::EmptyOp>() ||
        !cast<RankedTensorType>(init.getType()).hasStaticShape())
      return refuse(forall, "a shared output that is not a fresh static "
                            "tensor");
    plan.placement[arg] = Placement::Rows;
  }
  chooseLandedStacks();
  if (failed(placeBlock(*forall.getBody())))
    return failure();
  for (Operation &op : forall.getTerminator().getYieldingOps()) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op);
    // A single chunk: its tile's (leading) rows go straight into the
    // output.
    Placement source = insert ? plan.of(insert.getSource()) : Placement::Empty;
    if (insert && source == Placement::ScalarTensor)
      continue; // a 0-d state, stored by one thread
    // A vector (KDA's decay row at a chunk's end, stacked for a later
    // kernel): an element per thread; a row or column vector by the threads
    // holding its values.
    if (insert &&
        llvm::is_contained(
            {Placement::Expr, Placement::RowVector, Placement::ColVector},
            source) &&
        insert.getSourceType().getRank() == 1 &&
        insert.getSourceType().hasStaticShape())
      continue;
    if (insert && insert.hasUnitStride() &&
        (source == Placement::Prefix || source == Placement::Frag ||
         source == Placement::Expr)) {
      auto prefix = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
      Value tile =
          source == Placement::Prefix ? prefix.getSource() : insert.getSource();
      // A row or column vector's leading values (KDA's dβ of a chunk).
      if (source == Placement::Prefix && insert.getSourceType().getRank() == 1)
        continue;
      if (insert.getSourceType().getRank() != 2 ||
          insert.getSourceType().isDynamicDim(1) ||
          insert.getSourceType().getDimSize(1) !=
              cast<RankedTensorType>(tile.getType()).getDimSize(1))
        return refuse(&op, "output rows that are not a tile's leading rows");
      continue;
    }
    tensor::ExtractSliceOp slice =
        insert ? plan.rowsSlice.lookup(insert.getSource()) : nullptr;
    if (!slice || slice.getSource() != insert.getDest() ||
        slice.getMixedOffsets() != insert.getMixedOffsets() ||
        slice.getMixedSizes() != insert.getMixedSizes())
      return refuse(&op, "a result that is not the rows written through "
                         "its own slice (final states)");
  }
  if (plan.contractions == 0)
    return refuse(forall, "no contraction to put on tensor cores");
  return success();
}

int64_t TilePlan::conversions() const {
  return llvm::count_if(staged, [&](const Staged &s) {
    return !s.exact && of(s.tile) == Placement::Frag;
  });
}

int64_t TilePlan::copies() const {
  return llvm::count_if(staged,
                        [](const Staged &s) { return !s.exact && !s.landing; });
}

std::string TilePlan::summary() const {
  int64_t frags = 0, exprs = 0;
  // (Stacked tiles land a chunk ahead inside a chunk loop, or first.)
  int64_t stacksFirst = llvm::count_if(landing, [](const Landing &l) {
    return l.f32 && !isa<scf::ForOp>(l.tokens->getParentOp());
  });
  for (auto &[value, p] : placement) {
    if (!isa<RankedTensorType>(value.getType()))
      continue;
    frags += p == Placement::Frag;
    exprs += p == Placement::Expr;
  }
  return llvm::formatv(
             "register tiles: {0} contractions on wgmma, {1} "
             "fragments, {2} on-demand tiles, {3} shared-memory "
             "operand copies ({4} conversions from fragments; {5} "
             "operands read from landing buffers), {6} bytes of "
             "shared memory, {7} warpgroup(s), {8} fragment "
             "registers per thread at most",
             contractions, frags, exprs, copies(), conversions(),
             llvm::count_if(
                 staged, [](const Staged &s) { return s.landing.has_value(); }),
             sharedBytes, warpgroups, peakFragmentRegisters / warpgroups)
             .str() +
         (threadReductions || exactCopies()
              ? llvm::formatv(", {0} exact copies of fragments, {1} "
                              "reductions by thread",
                              exactCopies(), threadReductions)
                    .str()
              : std::string()) +
         (rowReductions || colReductions
              ? llvm::formatv(", {0} reductions of rows, {1} of columns",
                              rowReductions, colReductions)
                    .str()
              : std::string()) +
         (stacksFirst
              ? llvm::formatv(", {0} stacked tiles copied first", stacksFirst)
                    .str()
              : std::string()) +
         (registerA.empty()
              ? std::string()
              : llvm::formatv(", {0} contractions reading A from registers",
                              registerA.size())
                    .str());
}

/// Swaps the two results of `op`'s output map (its 2-D output written
/// transposed); returns the output.
static Value transposeOutputMap(linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap &out = maps.back();
  out = AffineMap::get(out.getNumDims(), 0,
                       {out.getResult(1), out.getResult(0)}, op.getContext());
  op.setIndexingMapsAttr(OpBuilder(op).getAffineMapArrayAttr(maps));
  return op.getResult(0);
}

/// A product computed again with its output transposed: the same
/// operands, a fresh fill of the transposed shape (nullptr unless the
/// product starts from a fill).
static Value transposedProduct(linalg::GenericOp product) {
  auto fill =
      product.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (!fill || product.getNumResults() != 1)
    return nullptr;
  auto type = cast<RankedTensorType>(product.getResult(0).getType());
  auto flipped = RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)},
                                       type.getElementType());
  OpBuilder b(product->getContext());
  b.setInsertionPointAfter(product);
  Location loc = product.getLoc();
  Value empty = tensor::EmptyOp::create(b, loc, flipped.getShape(),
                                        flipped.getElementType());
  Value init = linalg::FillOp::create(b, loc, fill.value(), empty).getResult(0);
  auto clone = cast<linalg::GenericOp>(b.clone(*product));
  clone.getDpsInitOperand(0)->set(init);
  clone->getResult(0).setType(flipped);
  return transposeOutputMap(clone);
}

/// Whether `op` is a 2-D elementwise op whose output is only written:
/// transposedElementwise can compute it transposed.
static bool isTransposableElementwise(linalg::GenericOp op) {
  return op.getNumLoops() == 2 && op.getNumReductionLoops() == 0 &&
         op.getNumDpsInits() == 1 && op.getNumResults() == 1 &&
         op.getMatchingBlockArgument(op.getDpsInitOperand(0)).use_empty() &&
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isPermutation() &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isProjectedPermutation(); });
}

/// A 2-D elementwise op computed again with its output transposed: the
/// same loops and inputs, the output's map swapped (nullptr unless its
/// output is only written). Its own fragment inputs are then read in the
/// other orientation, for the caller to rewrite in turn.
static Value transposedElementwise(linalg::GenericOp op) {
  if (!isTransposableElementwise(op))
    return nullptr;
  auto type = cast<RankedTensorType>(op.getResult(0).getType());
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  Value empty = tensor::EmptyOp::create(
      b, op.getLoc(), {type.getDimSize(1), type.getDimSize(0)},
      type.getElementType());
  auto clone = cast<linalg::GenericOp>(b.clone(*op));
  clone.getDpsInitOperand(0)->set(empty);
  clone->getResult(0).setType(cast<RankedTensorType>(empty.getType()));
  return transposeOutputMap(clone);
}

/// What reading `input` of `op` in the other orientation than `op`'s output
/// costs transposeProductReads: a product computed again (nothing where
/// the reader is its only user, the original then dead) or an elementwise
/// op with fragment inputs computed again; inputs from outside the loop,
/// and elementwise ops of indices alone (masks), cost nothing.
static int64_t transposedReadCost(scf::ForallOp forall, OpOperand *input) {
  auto producer = input->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || !forall->isProperAncestor(producer))
    return 0;
  if (matchContraction(producer))
    return producer->hasOneUse() ? 0 : 1;
  return producer.getNumDpsInputs() == 0 ? 0 : 1;
}

/// The elementwise ops that would be computed transposed with `op`: `op`
/// and, through their readers, every elementwise op reading one of them,
/// up to the contractions that read them (either orientation of an
/// operand costs a contraction the same). Empty where another op reads
/// one of them (a yield, a slice, a reduction), or for more than 16.
static SmallVector<linalg::GenericOp> transposableGroup(scf::ForallOp forall,
                                                        linalg::GenericOp op) {
  SmallVector<linalg::GenericOp> group = {op};
  llvm::SmallPtrSet<Operation *, 16> inGroup = {op};
  for (unsigned i = 0; i < group.size(); ++i) {
    for (Operation *user : group[i]->getResult(0).getUsers()) {
      auto reader = dyn_cast<linalg::GenericOp>(user);
      if (!reader || !forall->isProperAncestor(reader) ||
          llvm::is_contained(reader.getDpsInits(), group[i]->getResult(0)))
        return {};
      if (matchContraction(reader) || inGroup.contains(reader))
        continue;
      if (!isTransposableElementwise(reader) || group.size() == 16)
        return {};
      group.push_back(reader);
      inGroup.insert(reader);
    }
  }
  return group;
}

/// Computes every op of `group` transposed in its place (its readers read
/// it through a transposed map); returns the new ops.
static SmallVector<linalg::GenericOp>
transposeGroup(ArrayRef<linalg::GenericOp> group) {
  llvm::DenseMap<Value, Value> replacement;
  SmallVector<linalg::GenericOp> flipped;
  for (linalg::GenericOp op : group) {
    Value result = transposedElementwise(op);
    replacement[op->getResult(0)] = result;
    flipped.push_back(result.getDefiningOp<linalg::GenericOp>());
  }
  auto swapResults = [](AffineMap map) {
    return AffineMap::get(map.getNumDims(), 0,
                          {map.getResult(1), map.getResult(0)},
                          map.getContext());
  };
  for (linalg::GenericOp op : group) {
    for (OpOperand &use :
         llvm::make_early_inc_range(op->getResult(0).getUses())) {
      auto reader = cast<linalg::GenericOp>(use.getOwner());
      SmallVector<AffineMap> maps = reader.getIndexingMapsArray();
      maps[use.getOperandNumber()] = swapResults(maps[use.getOperandNumber()]);
      use.set(replacement.lookup(op->getResult(0)));
      reader.setIndexingMapsAttr(OpBuilder(reader).getAffineMapArrayAttr(maps));
    }
  }
  for (linalg::GenericOp op : llvm::reverse(group))
    op->erase();
  return flipped;
}

void mlir::hla::gpumap::transposeProductReads(scf::ForallOp forall) {
  SmallVector<linalg::GenericOp> readers;
  forall.walk([&](linalg::GenericOp op) {
    if (op.getNumLoops() == 2 && op.getNumReductionLoops() == 0 &&
        op.getNumDpsInits() == 1)
      readers.push_back(op);
  });
  llvm::DenseMap<Operation *, Value> transposed;
  // Elementwise ops computed transposed in place of themselves: never
  // turned back.
  llvm::SmallPtrSet<Operation *, 8> flippedReaders;
  // The keys and values of `transposed`.
  llvm::SmallPtrSet<Operation *, 8> recomputed;
  // Transposed elementwise ops join the readers: their inputs are read in
  // the other orientation now (the backward's (mask ⊙ (dO Vᵀ))ᵀ).
  while (!readers.empty()) {
    linalg::GenericOp op = readers.pop_back_val();
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (!outMap.isPermutation())
      continue;
    // Where elementwise ops up to the contractions that read them read
    // more inputs transposed than as they are, they are computed
    // transposed instead and the contractions read them so:
    // (P ⊙ Mᵀ)ᵀ·B instead of (Pᵀ ⊙ M)·B with Pᵀ a product computed again.
    SmallVector<linalg::GenericOp> group;
    if (!flippedReaders.contains(op) && isTransposableElementwise(op))
      group = transposableGroup(forall, op);
    // Ops computed again transposed, and their originals, stay: `transposed`
    // refers to them.
    if (llvm::any_of(group, [&](linalg::GenericOp member) {
          return recomputed.contains(member);
        }))
      group.clear();
    if (!group.empty()) {
      llvm::SmallPtrSet<Operation *, 16> inGroup;
      for (linalg::GenericOp member : group)
        inGroup.insert(member);
      int64_t costNow = 0, costFlipped = 0;
      for (linalg::GenericOp member : group) {
        AffineMap out =
            member.getMatchingIndexingMap(member.getDpsInitOperand(0));
        for (OpOperand *input : member.getDpsInputOperands()) {
          AffineMap map = member.getMatchingIndexingMap(input);
          Operation *producer = input->get().getDefiningOp();
          if (!map.isPermutation() || (producer && inGroup.contains(producer)))
            continue;
          (map == out ? costFlipped : costNow) +=
              transposedReadCost(forall, input);
        }
      }
      if (costFlipped < costNow) {
        for (linalg::GenericOp member : group)
          llvm::erase(readers, member);
        for (linalg::GenericOp flipped : transposeGroup(group)) {
          flippedReaders.insert(flipped);
          readers.push_back(flipped);
        }
        continue;
      }
    }
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    bool changed = false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      // Two dimensions: a permutation other than the output's is its
      // transpose.
      if (map == outMap || !map.isPermutation())
        continue;
      auto producer = input->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || !forall->isProperAncestor(producer))
        continue;
      bool product = matchContraction(producer).has_value();
      Value &flipped = transposed[producer];
      if (!flipped) {
        flipped = product ? transposedProduct(producer)
                          : transposedElementwise(producer);
        recomputed.insert(producer);
        if (flipped)
          recomputed.insert(flipped.getDefiningOp());
        if (flipped && !product)
          readers.push_back(flipped.getDefiningOp<linalg::GenericOp>());
      }
      if (!flipped)
        continue;
      input->set(flipped);
      maps[input->getOperandNumber()] = outMap;
      changed = true;
    }
    if (changed)
      op.setIndexingMapsAttr(OpBuilder(op).getAffineMapArrayAttr(maps));
  }
  // Ops now read only transposed are computed only so.
  for (auto &[producer, flipped] : transposed)
    if (flipped && producer->use_empty())
      producer->erase();
}

/// The warpgroups a block wants before its fragments' columns are looked
/// at: `requested`, or for 0 two where one would hold more than 128
/// fragment registers a thread, except that row and column reductions keep
/// the block to one (a row's elements are all one warpgroup's, the threads
/// sharing a row combining by shuffles; a column's too, its warps through
/// shared memory).
static int64_t wantedWarpgroups(const TilePlan &plan, int64_t requested) {
  if (requested)
    return requested;
  if (plan.rowReductions || plan.colReductions)
    return 1;
  return plan.peakFragmentRegisters > 128 ? 2 : 1;
}

OpOperand *mlir::hla::gpumap::contractionOperandA(linalg::GenericOp op) {
  AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  for (OpOperand *input : op.getDpsInputOperands())
    if (op.getMatchingIndexingMap(input).isFunctionOfDim(
            mapC.getDimPosition(0)))
      return input;
  return nullptr;
}

/// Gives every region of the block's shared memory (landing buffers,
/// scratch, copies) the lowest offset after the regions before it, in the
/// order they had: the gaps of dropped copies closed.
static void closeGaps(TilePlan &plan) {
  llvm::SmallVector<std::pair<int64_t *, int64_t>> regions;
  for (TilePlan::Landing &l : plan.landing)
    regions.push_back({&l.offset, l.bytes()});
  for (auto &[op, offset] : plan.reductionScratch)
    regions.push_back({&offset, TilePlan::scratchBytes(op)});
  for (auto &[op, scratch] : plan.conversionScratch)
    regions.push_back({&scratch.offset, scratch.bytes()});
  for (TilePlan::Staged &s : plan.staged)
    if (!s.landing)
      regions.push_back({&s.offset, s.bytes()});
  // (Regions of no bytes may share an offset with the next: kept in
  // front of it.)
  llvm::sort(regions, [](const auto &x, const auto &y) {
    return std::make_pair(*x.first, x.second) <
           std::make_pair(*y.first, y.second);
  });
  int64_t next = 0;
  for (auto &[offset, bytes] : regions) {
    *offset = next;
    next += llvm::alignTo(bytes, int64_t(128));
  }
  plan.sharedBytes = next;
}

void mlir::hla::gpumap::readOperandsFromRegisters(TilePlan &plan,
                                                  int64_t requestedWarpgroups) {
  if (wantedWarpgroups(plan, requestedWarpgroups) != 1)
    return;
  auto contractions = [&](auto each) {
    plan.forall.walk([&](linalg::GenericOp op) {
      std::optional<ContractionDims> dims = matchContraction(op);
      if (dims && plan.of(op.getResult(0)) == Placement::Frag)
        each(op, *dims);
    });
  };
  contractions([&](linalg::GenericOp op, const ContractionDims &dims) {
    OpOperand *a = contractionOperandA(op);
    AffineMap map = op.getMatchingIndexingMap(a);
    AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (plan.of(a->get()) == Placement::Frag && map.getNumResults() == 2 &&
        map.getDimPosition(0) == mapC.getDimPosition(0) &&
        map.getDimPosition(1) == dims.k)
      plan.registerA.insert(op);
  });
  if (plan.registerA.empty())
    return;
  // Copies are made for contractions only: those still read.
  llvm::DenseSet<Value> read;
  contractions([&](linalg::GenericOp op, const ContractionDims &) {
    for (OpOperand *input : op.getDpsInputOperands())
      if (!plan.registerA.contains(op) || input != contractionOperandA(op))
        read.insert(input->get());
  });
  llvm::erase_if(plan.staged, [&](const TilePlan::Staged &s) {
    return !s.exact && !s.landing && !read.contains(s.tile);
  });
  closeGaps(plan);
}

LogicalResult mlir::hla::gpumap::chooseWarpgroups(TilePlan &plan,
                                                  int64_t requested,
                                                  std::string &why) {
  int64_t count = wantedWarpgroups(plan, requested);
  if ((plan.rowReductions || plan.colReductions) && count > 1) {
    why = "a reduction of rows needs all of a row's columns in one "
          "warpgroup";
    return failure();
  }
  for (auto &[value, p] : plan.placement) {
    if (p != Placement::Frag)
      continue;
    int64_t cols = cast<RankedTensorType>(value.getType()).getDimSize(1);
    if (cols % (8 * count)) {
      if (!requested) {
        count = 1;
        break;
      }
      why = llvm::formatv("a fragment of {0} columns cannot be shared by {1} "
                          "warpgroups (8 columns each at least)",
                          cols, count)
                .str();
      return failure();
    }
  }
  plan.warpgroups = count;
  return success();
}

std::optional<TilePlan>
mlir::hla::gpumap::planRegisterTiles(scf::ForallOp forall, std::string &why,
                                     ExtraLandings extra) {
  TilePlan plan;
  plan.forall = forall;
  if (failed(Placer(forall, plan, why, extra).run()))
    return std::nullopt;
  return plan;
}
