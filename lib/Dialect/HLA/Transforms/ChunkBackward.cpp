//===- ChunkBackward.cpp - hla.prefix_vjp as loops over chunks --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Lowers hla.prefix_vjp with the backward derived from the monoid
// (ChunkVjp.h). Per (batch entry, head):
//
//   1. a pass over the chunks saves the state carried into each (X₀ of
//      chunk c; the chunk summaries are recomputed in pass 2, which is
//      cheaper than storing every component);
//   2. a pass from the last chunk to the first carries λ, the cotangent of
//      the state carried out of the chunk (zero after the last one). Each
//      chunk reads X₀, its summary Σ and λ; it writes its tokens' gradients
//      and hands ∂X₀ on as the previous chunk's λ.
//
// With parallel gradients, pass 2 only carries λ, saving the λ of every
// chunk like pass 1's states, and
//
//   3. a pass parallel over (batch entry, head, chunk) writes the tokens'
//      gradients from the chunk's saved X₀ and λ.
//
// Pass 3 computes the chunk's summary and the transposed combine a second
// time; in exchange the sequential passes are small (one combine's worth
// of products per chunk) and the gradients' products, the bulk of the
// work, run with every chunk in parallel.
//
// Value tiles: where the monoid keeps value columns apart (hla-chunk's
// test) and every live component has them, the state's and λ's columns
// [j, j + BV) depend only on the value input's and the cotangent's columns
// [j, j + BV). Passes 1 and 2 (with parallel gradients; the tokens'
// gradients, such as dq, sum over every column) then run per (batch entry,
// head, value tile), each iteration writing its columns of the stacks:
// more, smaller sequential loops where few (batch entry, head) pairs leave
// a GPU idle. Carried components without value columns are computed alike
// by every tile; each tile saves its own copy (parallel writes must not
// overlap) after the first tile's, which is the one read.
//
// The transposed combine rule (μ_A and μ_B) is an hla.combine under an
// auxiliary monoid whose components are the state, λ and μ_B, so it is
// lowered like every other combine.
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"

#include "hla/Dialect/HLA/Transforms/ChunkVjp.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

namespace {

/// A gradient term as rows: its chain transposed, so that it starts at the
/// token whose gradient it is, like a readout term.
static IndexTerm asRows(const MonoidSpec &spec, IndexTerm term) {
  std::reverse(term.chain.begin(), term.chain.end());
  for (ChainFactor &f : term.chain) {
    const MonoidSlot &slot = f.kind == ChainFactor::Kind::Token
                                 ? spec.inputs[f.slot]
                                 : spec.components[f.slot];
    if (slot.getRank() != 0)
      f.transposed = !f.transposed;
  }
  return term;
}

class PrefixVjpLowering {
public:
  PrefixVjpLowering(PrefixVjpOp op, int64_t chunk, bool parallelGradients,
                    int64_t valueTile, int64_t parallelism, bool splitGradients,
                    const ChunkPlan &forward, const ChunkVjpPlan &backward)
      : op(op), spec(op.getMonoid().getSpec()), chunk(chunk),
        parallelGradients(parallelGradients), valueTile(valueTile),
        parallelism(parallelism), splitGradients(splitGradients),
        forward(forward), backward(backward) {
    for (unsigned i = 0; i < op.getInputs().size(); ++i)
      allInputs.push_back(i);
  }

  LogicalResult lower();

private:
  /// The value tiles (`valueTiles`, `valueWidth`, the components' value
  /// dimensions) from `valueTile`; fails on an explicit tile the monoid or
  /// the shapes do not allow.
  LogicalResult prepareValueTiles();
  /// Builds what follows for the value tile whose first column is
  /// `offset` (null: for all columns): component shapes, loads and places.
  void selectColumns(Value offset);
  /// Offset `at` plus the current tile's first column where dimension `d`
  /// of component `c` holds value columns.
  OpFoldResult columnOffset(OpBuilder &b, Location loc, unsigned c, unsigned d,
                            OpFoldResult at) const;
  /// Whether component `c` is computed alike by every value tile.
  bool perTile(unsigned c) const {
    return valueTiles > 1 && componentValueDims[c].empty();
  }
  /// The bounds of a pass over (batch entry, head[, value tile]); its body's
  /// columns are selected by `enterPass`.
  llvm::SmallVector<OpFoldResult> passBounds(OpBuilder &b, bool tiled) const;
  void enterPass(OpBuilder &b, Location loc, Block *body, bool tiled);

  /// The chunk's rows [start, start + length) of a [B, T, H, ...] operand,
  /// zero-padded to `chunk` rows, f32; of a value operand (`value`), the
  /// current tile's columns.
  Value loadRows(OpBuilder &b, Location loc, Value operand, Value batch,
                 Value head, Value start, Value length, bool value = false);
  /// Sums `terms` (rows [c, width] or a component).
  FailureOr<Value> emitSum(TileBuilder &tb, const MonoidSpec &termSpec,
                           const ChunkTiles &tiles,
                           llvm::ArrayRef<IndexTerm> terms, bool isSummary,
                           llvm::ArrayRef<int64_t> shape) {
    return emitTermSum(tb, termSpec, tiles, *decay, op, terms, isSummary,
                       shape);
  }
  FailureOr<llvm::SmallVector<Value>> emitSummaries(OpBuilder &b, Location loc,
                                                    const ChunkTiles &tiles) {
    return emitChunkSummaries(b, loc, spec, forward, tiles, *decay, op,
                              componentShapes);
  }

  /// Pass 1: one loop per (batch entry, head) carrying the state and saving
  /// the state entering every chunk into a [B, H, N·r, ...] stack per
  /// carried component (N chunks, r the component's first dimension; a
  /// 0-d component: [B, H, N]). A pass of its own, so that pass 2 reads the
  /// states from memory an earlier kernel wrote, on every target.
  FailureOr<llvm::SmallVector<Value>> saveEntryStates(OpBuilder &b);
  RankedTensorType componentType(unsigned c) const {
    return RankedTensorType::get(componentShapes[c],
                                 Float32Type::get(op->getContext()));
  }
  RankedTensorType stackType(unsigned c) const;
  /// Chunk `at`'s place in a (batch entry, head) slice of a stack.
  std::pair<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>>
  stackPlace(OpBuilder &b, Location loc, unsigned c, Value at) const;
  /// The state entering chunk `at`, read from its stack.
  Value savedState(OpBuilder &b, Location loc, Value stack, Value bi, Value hi,
                   unsigned c, Value at) const;
  /// The (batch entry, head) slice of a [B, H, component] tensor.
  std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
             llvm::SmallVector<OpFoldResult>>
  statePlace(OpBuilder &b, Value bi, Value hi, unsigned c) const;
  Value stateOf(OpBuilder &b, Location loc, Value state, Value bi, Value hi,
                unsigned c) const {
    auto [offsets, sizes, strides] = statePlace(b, bi, hi, c);
    return tensor::ExtractSliceOp::create(b, loc, componentType(c), state,
                                          offsets, sizes, strides);
  }
  /// A chunk's first token and its token count.
  std::pair<Value, Value> bounds(OpBuilder &b, Location loc, Value c) const;
  /// The (batch entry, head[, value tile]) slice of a stack, as a loop
  /// carries it.
  RankedTensorType stackRowsType(unsigned c) const;
  std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
             llvm::SmallVector<OpFoldResult>>
  stackRowsPlace(OpBuilder &b, Value bi, Value hi, unsigned c) const;

  /// Rows [start, start + rows) of input `input`'s gradient for (batch
  /// entry, head), [rows, width] or [rows]; all T rows by default.
  std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
             llvm::SmallVector<OpFoldResult>>
  rowsPlace(OpBuilder &b, Value bi, Value hi, unsigned input,
            OpFoldResult start = {}, OpFoldResult rows = {}) const;
  /// `grad`'s rows into `dest` (one (batch entry, head)'s rows) at `start`.
  Value insertRows(OpBuilder &b, Location loc, Value grad, Value dest,
                   Value start, Value rows) const;

  /// What one chunk of the reverse pass computes.
  struct ChunkStep {
    /// ∂X₀ per live component: the previous chunk's λ.
    llvm::SmallVector<Value> lambda;
    /// Per input, the gradient of the chunk's tokens ([rows, width] or
    /// [rows]) in the input's element type.
    llvm::SmallVector<Value> gradients;
    Value start, rows;
  };
  /// Chunk `c` of (bi, hi), from the state entering it (read from
  /// `entryStates`) and `lambda`, the cotangent of the state it carries
  /// out (per live component): the previous chunk's λ (`wantLambda`) and
  /// the tokens' gradients of the inputs `gradientsOf` (in that order).
  FailureOr<ChunkStep> emitChunkStep(OpBuilder &nb, Location l, Value bi,
                                     Value hi, Value c, ValueRange lambda,
                                     llvm::ArrayRef<Value> entryStates,
                                     bool wantLambda,
                                     llvm::ArrayRef<unsigned> gradientsOf);
  /// Pass 3 for the inputs `inputs`: their gradients, every chunk in
  /// parallel, from the saved states and λ (`lambdas`).
  FailureOr<llvm::SmallVector<Value>>
  emitGradientPass(OpBuilder &b, llvm::ArrayRef<unsigned> inputs,
                   llvm::ArrayRef<Value> entryStates, ValueRange lambdas);

  PrefixVjpOp op;
  const MonoidSpec &spec;
  int64_t chunk;
  bool parallelGradients;
  int64_t valueTile, parallelism;
  bool splitGradients;
  /// 0, 1, ... for every input.
  llvm::SmallVector<unsigned> allInputs;
  const ChunkPlan &forward;
  const ChunkVjpPlan &backward;
  std::unique_ptr<DecayTiles> decay;
  /// The components' shapes in the pass being built (a value tile's
  /// columns there), and in full.
  llvm::SmallVector<llvm::SmallVector<int64_t>> componentShapes, fullShapes;
  int64_t valueTiles = 1, valueWidth = 0;
  /// Per component, its dimensions holding value columns; per input,
  /// whether its rows are value columns.
  llvm::SmallVector<llvm::SmallVector<unsigned>> componentValueDims;
  llvm::SmallVector<bool> inputIsValue;
  /// The current tile and its first value column (null: all columns).
  Value valueTileIndex, valueOffset;
  llvm::SmallVector<unsigned> carried;
  /// The carried components with a gradient (λ is carried for these).
  llvm::SmallVector<unsigned> live;
  /// The gradients' [T, width] or [T] rows of one (batch entry, head).
  llvm::SmallVector<RankedTensorType> rowTypes;
  MonoidAttr auxMonoid;
  const MonoidReadout *den = nullptr;
  unsigned numIndex = 0, denIndex = 0;
  int64_t batch = 0, length = 0, heads = 0, numChunks = 0;
};

LogicalResult PrefixVjpLowering::prepareValueTiles() {
  fullShapes = componentShapes;
  componentValueDims.assign(spec.components.size(), {});
  inputIsValue.assign(spec.inputs.size(), false);
  int64_t width =
      cast<RankedTensorType>(op.getCotangent().getType()).getDimSize(3);
  if (valueTile == 0 || (valueTile > 0 && valueTile >= width))
    return success();
  // Why value tiles cannot apply, if they cannot.
  std::string refusal;
  std::optional<std::string> symbol = separableValueSymbol(spec);
  if (!symbol) {
    refusal = "a rule of monoid '" + spec.name + "' mixes value columns";
  } else if (den) {
    refusal = "the normalizer's gradient sums over every value column";
  } else {
    for (unsigned c = 0; c < spec.components.size(); ++c)
      for (auto [d, name] : llvm::enumerate(spec.components[c].shape))
        if (name == *symbol)
          componentValueDims[c].push_back(d);
    for (unsigned c : carried)
      if (llvm::is_contained(componentValueDims[c], 0u))
        refusal = "component '" + spec.components[c].name +
                  "' has value columns in its first dimension";
    for (unsigned c : live)
      if (componentValueDims[c].empty())
        refusal = "the gradient of component '" + spec.components[c].name +
                  "', which has no value columns, sums over all of them";
  }
  if (!refusal.empty()) {
    componentValueDims.assign(spec.components.size(), {});
    if (valueTile == -1)
      return success();
    return chunkError(op) << "value-tile " << valueTile
                          << ": the backward cannot cut value columns ("
                          << refusal << ")";
  }
  int64_t tile = valueTile;
  if (tile == -1) {
    // The most tiles (a power of two, >= 16 columns each) whose (batch
    // entry, head, tile) iterations fit one wave of `parallelism`.
    int64_t tiles = 1;
    while (width % (2 * tiles) == 0 && width / (2 * tiles) >= 16 &&
           batch * heads * 2 * tiles <= parallelism)
      tiles *= 2;
    tile = width / tiles;
  }
  if (width % tile != 0)
    return chunkError(op) << "value-tile " << tile
                          << " must divide the value width " << width;
  valueTiles = width / tile;
  valueWidth = tile;
  for (unsigned i = 0; i < spec.inputs.size(); ++i) {
    llvm::ArrayRef<std::string> shape = spec.inputs[i].shape;
    inputIsValue[i] = !shape.empty() && shape.back() == *symbol;
  }
  return success();
}

void PrefixVjpLowering::selectColumns(Value offset) {
  valueOffset = offset;
  componentShapes = fullShapes;
  if (offset)
    for (unsigned c = 0; c < componentShapes.size(); ++c)
      for (unsigned d : componentValueDims[c])
        componentShapes[c][d] = valueWidth;
}

OpFoldResult PrefixVjpLowering::columnOffset(OpBuilder &b, Location loc,
                                             unsigned c, unsigned d,
                                             OpFoldResult at) const {
  if (!valueOffset || !llvm::is_contained(componentValueDims[c], d))
    return at;
  if (isConstantIntValue(at, 0))
    return valueOffset;
  return OpFoldResult(arith::AddIOp::create(
      b, loc, getValueOrCreateConstantIndexOp(b, loc, at), valueOffset));
}

llvm::SmallVector<OpFoldResult>
PrefixVjpLowering::passBounds(OpBuilder &b, bool tiled) const {
  llvm::SmallVector<OpFoldResult> bounds = {idx(b, batch), idx(b, heads)};
  if (tiled && valueTiles > 1)
    bounds.push_back(idx(b, valueTiles));
  return bounds;
}

void PrefixVjpLowering::enterPass(OpBuilder &b, Location loc, Block *body,
                                  bool tiled) {
  valueTileIndex = Value();
  Value offset;
  if (tiled && valueTiles > 1) {
    valueTileIndex = body->getArgument(2);
    offset = arith::MulIOp::create(
        b, loc, valueTileIndex,
        arith::ConstantIndexOp::create(b, loc, valueWidth));
  }
  selectColumns(offset);
}

Value PrefixVjpLowering::loadRows(OpBuilder &b, Location loc, Value operand,
                                  Value batchIndex, Value head, Value start,
                                  Value rows, bool value) {
  auto type = cast<RankedTensorType>(operand.getType());
  llvm::SmallVector<OpFoldResult> offsets = {batchIndex, start, head};
  int64_t width = 0;
  if (type.getRank() == 4) {
    bool columns = value && valueOffset;
    offsets.push_back(columns ? OpFoldResult(valueOffset) : idx(b, 0));
    width = columns ? valueWidth : type.getDimSize(3);
  }
  return loadChunkRows(b, loc, operand, offsets, rows, chunk, width);
}

std::pair<Value, Value> PrefixVjpLowering::bounds(OpBuilder &b, Location loc,
                                                  Value c) const {
  Value size = arith::ConstantIndexOp::create(b, loc, chunk);
  Value start = arith::MulIOp::create(b, loc, c, size);
  Value rest = arith::SubIOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, length), start);
  Value rows = arith::MinSIOp::create(b, loc, rest, size);
  return {start, rows};
}

/// A stack of `chunks` states of `shape`, stacked along its first
/// dimension (a 0-d state: one element per chunk).
static llvm::SmallVector<int64_t> stackedShape(llvm::ArrayRef<int64_t> shape,
                                               int64_t chunks) {
  if (shape.empty())
    return {chunks};
  llvm::SmallVector<int64_t> stack = {chunks * shape[0]};
  llvm::append_range(stack, shape.drop_front());
  return stack;
}

RankedTensorType PrefixVjpLowering::stackType(unsigned c) const {
  llvm::SmallVector<int64_t> stack = {batch, heads};
  llvm::append_range(
      stack,
      stackedShape(fullShapes[c], numChunks * (perTile(c) ? valueTiles : 1)));
  return RankedTensorType::get(stack, Float32Type::get(op->getContext()));
}

RankedTensorType PrefixVjpLowering::stackRowsType(unsigned c) const {
  return RankedTensorType::get(stackedShape(componentShapes[c], numChunks),
                               Float32Type::get(op->getContext()));
}

std::pair<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>>
PrefixVjpLowering::stackPlace(OpBuilder &b, Location loc, unsigned c,
                              Value at) const {
  llvm::ArrayRef<int64_t> shape = componentShapes[c];
  if (shape.empty())
    return {{at}, {idx(b, 1)}};
  Value first = arith::MulIOp::create(
      b, loc, at, arith::ConstantIndexOp::create(b, loc, shape[0]));
  llvm::SmallVector<OpFoldResult> offsets = {first}, sizes;
  offsets.append(shape.size() - 1, idx(b, 0));
  for (int64_t s : shape)
    sizes.push_back(idx(b, s));
  return {offsets, sizes};
}

Value PrefixVjpLowering::savedState(OpBuilder &b, Location loc, Value stack,
                                    Value bi, Value hi, unsigned c,
                                    Value at) const {
  auto [offsets, sizes] = stackPlace(b, loc, c, at);
  for (unsigned d = 1; d < offsets.size(); ++d)
    offsets[d] = columnOffset(b, loc, c, d, offsets[d]);
  offsets.insert(offsets.begin(), {bi, hi});
  sizes.insert(sizes.begin(), {idx(b, 1), idx(b, 1)});
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return tensor::ExtractSliceOp::create(b, loc, componentType(c), stack,
                                        offsets, sizes, strides);
}

/// Offsets, sizes and strides of the [shape] slice at (bi, hi, offsets...)
/// of a [B, H, ...] tensor.
static std::tuple<llvm::SmallVector<OpFoldResult>,
                  llvm::SmallVector<OpFoldResult>,
                  llvm::SmallVector<OpFoldResult>>
pairSlice(OpBuilder &b, Value bi, Value hi, llvm::ArrayRef<int64_t> shape,
          llvm::ArrayRef<OpFoldResult> at) {
  llvm::SmallVector<OpFoldResult> offsets = {bi, hi},
                                  sizes = {idx(b, 1), idx(b, 1)};
  llvm::append_range(offsets, at);
  for (int64_t s : shape)
    sizes.push_back(idx(b, s));
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return std::make_tuple(offsets, sizes, strides);
}

std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
           llvm::SmallVector<OpFoldResult>>
PrefixVjpLowering::statePlace(OpBuilder &b, Value bi, Value hi,
                              unsigned c) const {
  Location loc = op->getLoc();
  llvm::SmallVector<OpFoldResult> at;
  for (unsigned d = 0; d < componentShapes[c].size(); ++d)
    at.push_back(columnOffset(b, loc, c, d, idx(b, 0)));
  return pairSlice(b, bi, hi, componentShapes[c], at);
}

std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
           llvm::SmallVector<OpFoldResult>>
PrefixVjpLowering::stackRowsPlace(OpBuilder &b, Value bi, Value hi,
                                  unsigned c) const {
  Location loc = op->getLoc();
  llvm::ArrayRef<int64_t> rows = stackRowsType(c).getShape();
  // A per-tile component's copies follow one another along the stack.
  OpFoldResult first = idx(b, 0);
  if (perTile(c) && valueTileIndex)
    first = OpFoldResult(
        arith::MulIOp::create(b, loc, valueTileIndex,
                              arith::ConstantIndexOp::create(b, loc, rows[0])));
  llvm::SmallVector<OpFoldResult> at = {first};
  for (unsigned d = 1; d < rows.size(); ++d)
    at.push_back(columnOffset(b, loc, c, d, idx(b, 0)));
  return pairSlice(b, bi, hi, rows, at);
}

FailureOr<llvm::SmallVector<Value>>
PrefixVjpLowering::saveEntryStates(OpBuilder &b) {
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  llvm::SmallVector<Value> stacks;
  for (unsigned c : carried)
    stacks.push_back(
        tensor::EmptyOp::create(b, loc, stackType(c).getShape(), f32));
  auto states =
      scf::ForallOp::create(b, loc, passBounds(b, true), stacks, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = states.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  enterPass(b, loc, body, true);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  OpBuilder hoist(b.getContext());
  hoist.setInsertionPointAfter(c0.getDefiningOp());
  decay = std::make_unique<DecayTiles>(hoist, loc, chunk, forward.gamma);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value cN = arith::ConstantIndexOp::create(b, loc, numChunks);

  // Carried: the state, then each stack's (batch entry, head) slice.
  size_t k = carried.size();
  llvm::SmallVector<Type> fullTypes;
  for (unsigned c = 0; c < spec.components.size(); ++c)
    fullTypes.push_back(componentType(c));
  llvm::SmallVector<Value> loopInits;
  for (auto [i, c] : llvm::enumerate(carried))
    loopInits.push_back(
        op.getInit().empty()
            ? buildMonoidIdentity(b, loc, spec, c, componentType(c))
            : stateOf(b, loc, op.getInit()[i], bi, hi, c));
  for (auto [i, c] : llvm::enumerate(carried)) {
    auto [offsets, sizes, strides] = stackRowsPlace(b, bi, hi, c);
    loopInits.push_back(tensor::ExtractSliceOp::create(
        b, loc, stackRowsType(c), states.getRegionIterArgs()[i], offsets, sizes,
        strides));
  }
  // The state is saved as the chunk starts; the last chunk's combine gives
  // the final state, which no gradient reads (one chunk's summary of N).
  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, c0, cN, c1, loopInits,
      [&](OpBuilder &nb, Location l, Value c, ValueRange iter) {
        llvm::SmallVector<Value> saved;
        for (auto [i, cc] : llvm::enumerate(carried)) {
          auto [offsets, sizes] = stackPlace(nb, l, cc, c);
          llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(nb, 1));
          saved.push_back(tensor::InsertSliceOp::create(
              nb, l, iter[i], iter[k + i], offsets, sizes, strides));
        }
        auto [start, rows] = bounds(nb, l, c);
        ChunkTiles tiles;
        tiles.chunk = chunk;
        tiles.length = rows;
        for (auto [i, input] : llvm::enumerate(op.getInputs()))
          tiles.tokens.push_back(
              loadRows(nb, l, input, bi, hi, start, rows, inputIsValue[i]));
        FailureOr<llvm::SmallVector<Value>> summary =
            emitSummaries(nb, l, tiles);
        if (failed(summary)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        llvm::SmallVector<Value> next = combineCarried(
            nb, l, op.getMonoid(), iter.take_front(k), *summary, fullTypes);
        // Written over the carried state after its last read: one buffer
        // for the loop (as pass 2's λ).
        for (size_t i = 0; i < k; ++i)
          next[i] =
              linalg::CopyOp::create(nb, l, next[i], iter[i]).getResult(0);
        llvm::append_range(next, saved);
        scf::YieldOp::create(nb, l, next);
      });
  if (failed(status))
    return failure();
  b.setInsertionPointToStart(states.getTerminator().getBody());
  for (auto [i, c] : llvm::enumerate(carried)) {
    auto [offsets, sizes, strides] = stackRowsPlace(b, bi, hi, c);
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(k + i),
                                          states.getRegionIterArgs()[i],
                                          offsets, sizes, strides);
  }
  enterPass(b, loc, body, false);
  return llvm::SmallVector<Value>(states.getResults());
}

std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
           llvm::SmallVector<OpFoldResult>>
PrefixVjpLowering::rowsPlace(OpBuilder &b, Value bi, Value hi, unsigned input,
                             OpFoldResult start, OpFoldResult rows) const {
  llvm::SmallVector<OpFoldResult> offsets = {bi, start ? start : idx(b, 0), hi},
                                  sizes = {idx(b, 1),
                                           rows ? rows : idx(b, length),
                                           idx(b, 1)};
  if (rowTypes[input].getRank() == 2) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, rowTypes[input].getDimSize(1)));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return std::make_tuple(offsets, sizes, strides);
}

Value PrefixVjpLowering::insertRows(OpBuilder &b, Location loc, Value grad,
                                    Value dest, Value start, Value rows) const {
  auto type = cast<RankedTensorType>(grad.getType());
  llvm::SmallVector<OpFoldResult> at = {start}, sizes = {rows};
  if (type.getRank() == 2) {
    at.push_back(idx(b, 0));
    sizes.push_back(idx(b, type.getDimSize(1)));
  }
  llvm::SmallVector<OpFoldResult> ones(at.size(), idx(b, 1));
  return tensor::InsertSliceOp::create(b, loc, grad, dest, at, sizes, ones);
}

FailureOr<PrefixVjpLowering::ChunkStep> PrefixVjpLowering::emitChunkStep(
    OpBuilder &nb, Location l, Value bi, Value hi, Value c, ValueRange lambda,
    llvm::ArrayRef<Value> entryStates, bool wantLambda,
    llvm::ArrayRef<unsigned> gradientsOf) {
  unsigned n = spec.components.size();
  Type f32 = nb.getF32Type();
  const MonoidSpec &vjpSpec = backward.vjpSpec;
  auto isLive = [&](unsigned cc) { return llvm::is_contained(live, cc); };
  auto lambdaOf = [&](unsigned cc) {
    return lambda[llvm::find(live, cc) - live.begin()];
  };
  TileBuilder tb(nb, l);
  ChunkStep step;
  std::tie(step.start, step.rows) = bounds(nb, l, c);
  ChunkTiles tiles;
  tiles.chunk = chunk;
  tiles.length = step.rows;
  for (auto [i, input] : llvm::enumerate(op.getInputs()))
    tiles.tokens.push_back(
        loadRows(nb, l, input, bi, hi, step.start, step.rows, inputIsValue[i]));
  tiles.carried.assign(n, Value());
  for (auto [j, cc] : llvm::enumerate(carried))
    tiles.carried[cc] = savedState(nb, l, entryStates[j], bi, hi, cc, c);
  FailureOr<llvm::SmallVector<Value>> summary = emitSummaries(nb, l, tiles);
  if (failed(summary))
    return failure();

  // The readouts' cotangents: g itself, or through num / (den + ε).
  Value g = loadRows(nb, l, op.getCotangent(), bi, hi, step.start, step.rows,
                     /*value=*/true);
  llvm::SmallVector<Value> cotangents(spec.readouts.size());
  if (!den) {
    cotangents[numIndex] = g;
  } else {
    int64_t width = tb.shapeOf(g)[1];
    FailureOr<Value> num =
        emitSum(tb, spec, tiles, forward.readouts[numIndex].terms, false,
                {chunk, width});
    FailureOr<Value> denom = emitSum(
        tb, spec, tiles, forward.readouts[denIndex].terms, false, {chunk});
    if (failed(num) || failed(denom))
      return failure();
    double eps = op.getEps().convertToDouble();
    Value inv = tb.generic(
        {*denom}, tb.empty({chunk}),
        {nb.getMultiDimIdentityMap(1), nb.getMultiDimIdentityMap(1)},
        {utils::IteratorType::parallel},
        [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
          Value e = arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(eps));
          Value one = arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(1));
          Value sum = arith::AddFOp::create(eb, el, args[0], e);
          return arith::DivFOp::create(eb, el, one, sum);
        });
    // d_num = g / (den + ε); d_den = −(g · num) / (den + ε)².
    cotangents[numIndex] = tb.scaleRows(g, inv);
    Value gn = tb.mul(tb.dotRows(g, *num), tb.mul(inv, inv));
    cotangents[denIndex] = tb.scale(gn, -1.0);
  }

  // μ_A (λ of the previous chunk, through the combine) and μ_B.
  llvm::SmallVector<Value> lhs, rhs;
  llvm::SmallVector<Type> auxTypes;
  for (unsigned part = 0; part < 3; ++part)
    for (unsigned cc = 0; cc < n; ++cc) {
      auxTypes.push_back(componentType(cc));
      Value a;
      if (part == 0)
        a = tiles.carried[cc];
      else if (part == 1 && isLive(cc))
        a = lambdaOf(cc);
      lhs.push_back(
          a ? a
            : Value(tensor::EmptyOp::create(nb, l, componentShapes[cc], f32)));
      rhs.push_back(part == 0 ? (*summary)[cc]
                              : Value(tensor::EmptyOp::create(
                                    nb, l, componentShapes[cc], f32)));
    }
  auto transposed =
      CombineOp::create(nb, l, TypeRange(auxTypes), auxMonoid, lhs, rhs);

  ChunkTiles vtiles = tiles;
  llvm::append_range(vtiles.tokens, cotangents);
  vtiles.carried.resize(3 * n);
  for (unsigned cc = 0; cc < n; ++cc) {
    if (isLive(cc))
      vtiles.carried[n + cc] = lambdaOf(cc);
    if (!backward.summaryCotangent[cc].empty())
      vtiles.carried[2 * n + cc] = transposed.getResult(2 * n + cc);
  }

  if (wantLambda)
    for (unsigned cc : live) {
      Value grad = backward.carriedFromCombine[cc].empty()
                       ? tb.zeros(componentShapes[cc])
                       : transposed.getResult(n + cc);
      for (const PlannedOutput &out : backward.carriedFromReadouts) {
        if (out.index != cc || out.terms.empty())
          continue;
        FailureOr<Value> fromReadouts =
            emitSum(tb, vjpSpec, vtiles, out.terms, true, componentShapes[cc]);
        if (failed(fromReadouts))
          return failure();
        grad = tb.add(grad, *fromReadouts);
      }
      step.lambda.push_back(grad);
    }
  for (unsigned s : gradientsOf) {
    const PlannedOutput &out = backward.inputGradients[s];
    RankedTensorType rowType = rowTypes[s];
    llvm::SmallVector<int64_t> tileShape = {chunk};
    if (rowType.getRank() == 2)
      tileShape.push_back(rowType.getDimSize(1));
    llvm::SmallVector<IndexTerm> terms;
    for (const IndexTerm &t : out.terms)
      terms.push_back(asRows(vjpSpec, t));
    FailureOr<Value> grad =
        emitSum(tb, vjpSpec, vtiles, terms, false, tileShape);
    if (failed(grad))
      return failure();
    Value cast = tb.castTo(*grad, rowType.getElementType());
    // The chunk's valid rows.
    llvm::SmallVector<OpFoldResult> zeros(tileShape.size(), idx(nb, 0));
    llvm::SmallVector<OpFoldResult> sizes = {step.rows};
    llvm::SmallVector<int64_t> validShape = {ShapedType::kDynamic};
    if (tileShape.size() == 2) {
      sizes.push_back(idx(nb, tileShape[1]));
      validShape.push_back(tileShape[1]);
    }
    llvm::SmallVector<OpFoldResult> ones(tileShape.size(), idx(nb, 1));
    step.gradients.push_back(tensor::ExtractSliceOp::create(
        nb, l, RankedTensorType::get(validShape, rowType.getElementType()),
        cast, zeros, sizes, ones));
  }
  return step;
}

LogicalResult PrefixVjpLowering::lower() {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  OpBuilder b(op);
  Type f32 = b.getF32Type();
  for (Value v : op->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return chunkError(op) << "the chunked backward needs static shapes";
  auto lead = cast<RankedTensorType>(op.getInputs()[0].getType());
  batch = lead.getDimSize(0);
  length = lead.getDimSize(1);
  heads = lead.getDimSize(2);
  numChunks = (length + chunk - 1) / chunk;
  carried = spec.getCarryComponents();
  MonoidDimBinder binder;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    std::string ignored;
    (void)binder.bind(
        spec.inputs[i],
        cast<RankedTensorType>(input.getType()).getShape().drop_front(3),
        ignored);
  }
  for (const MonoidSlot &slot : spec.components)
    componentShapes.push_back(llvm::to_vector(binder.resolve(slot)));
  for (auto &shape : componentShapes)
    if (llvm::any_of(shape, ShapedType::isDynamic))
      return chunkError(op) << "a state dimension is not fixed by the inputs";

  for (auto [i, r] : llvm::enumerate(spec.readouts)) {
    if (r.name == "num")
      numIndex = i;
    else if (r.name == "den")
      denIndex = i;
    else
      return chunkError(op)
             << "readout '" << r.name << "' is neither num nor den";
  }
  den = spec.findReadout("den");
  bool withStates = !op.getInit().empty() || !op.getFinalCotangent().empty();
  if (withStates)
    for (unsigned c : carried)
      if (!backward.differentiable[c])
        return chunkError(op)
               << "carried component '" << spec.components[c].name
               << "' depends on no input: the gradient of a "
                  "state through it is not derived";
  auxMonoid = MonoidAttr::get(ctx, transposedCombineMonoid(backward));
  for (unsigned c : carried)
    if (backward.differentiable[c])
      live.push_back(c);
  if (failed(prepareValueTiles()))
    return failure();
  for (Value input : op.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    llvm::SmallVector<int64_t> rowShape = {length};
    if (type.getRank() == 4)
      rowShape.push_back(type.getDimSize(3));
    rowTypes.push_back(RankedTensorType::get(rowShape, type.getElementType()));
  }

  // 1. The state carried into every chunk, saved by a pass of its own.
  FailureOr<llvm::SmallVector<Value>> entryStates = saveEntryStates(b);
  if (failed(entryStates))
    return failure();

  // 2. From the last chunk to the first, per (batch entry, head). Its
  // shared outputs: the inputs' gradients (or, with parallel gradients,
  // λ's stack per live component), then the init tensors' gradients.
  llvm::SmallVector<Value> inits;
  size_t nl = live.size();
  auto emptyLike = [&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    return tensor::EmptyOp::create(b, loc, type.getShape(),
                                   type.getElementType());
  };
  if (parallelGradients) {
    for (unsigned c : live)
      inits.push_back(
          tensor::EmptyOp::create(b, loc, stackType(c).getShape(), f32));
  } else {
    for (Value input : op.getInputs())
      inits.push_back(emptyLike(input));
  }
  size_t numFirst = inits.size();
  for (Value init : op.getInit())
    inits.push_back(emptyLike(init));
  auto loop = scf::ForallOp::create(b, loc, passBounds(b, parallelGradients),
                                    inits, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = loop.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), hi = body->getArgument(1);
    enterPass(b, loc, body, parallelGradients);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    // Masks are made on first use, from inside the loops; they go before
    // the loops, right after this constant.
    OpBuilder hoist(ctx);
    hoist.setInsertionPointAfter(c0.getDefiningOp());
    decay = std::make_unique<DecayTiles>(hoist, loc, chunk, forward.gamma);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value cN = arith::ConstantIndexOp::create(b, loc, numChunks);
    llvm::ArrayRef<BlockArgument> outs = loop.getRegionIterArgs();

    // λ after the last chunk: the final state's cotangent, or zero. Then
    // the (batch entry, head) rows of each first output.
    llvm::SmallVector<Value> loopInits;
    for (unsigned c : live) {
      auto pos = llvm::find(carried, c) - carried.begin();
      Value zero = TileBuilder(b, loc).zeros(componentShapes[c]);
      loopInits.push_back(
          op.getFinalCotangent().empty()
              ? zero
              : linalg::CopyOp::create(
                    b, loc,
                    stateOf(b, loc, op.getFinalCotangent()[pos], bi, hi, c),
                    zero)
                    .getResult(0));
    }
    for (size_t i = 0; i < numFirst; ++i) {
      if (parallelGradients) {
        auto [offsets, sizes, strides] = stackRowsPlace(b, bi, hi, live[i]);
        loopInits.push_back(tensor::ExtractSliceOp::create(
            b, loc, stackRowsType(live[i]), outs[i], offsets, sizes, strides));
      } else {
        auto [offsets, sizes, strides] = rowsPlace(b, bi, hi, i);
        loopInits.push_back(tensor::ExtractSliceOp::create(
            b, loc, rowTypes[i], outs[i], offsets, sizes, strides));
      }
    }
    LogicalResult status = success();
    auto backwardLoop = scf::ForOp::create(
        b, loc, c0, cN, c1, loopInits,
        [&](OpBuilder &nb, Location l, Value i, ValueRange iter) {
          Value last = arith::SubIOp::create(nb, l, cN, c1);
          Value c = arith::SubIOp::create(nb, l, last, i);
          llvm::SmallVector<Value> firsts;
          if (parallelGradients)
            for (auto [j, cc] : llvm::enumerate(live)) {
              // λ of this chunk, for pass 3.
              auto [offsets, sizes] = stackPlace(nb, l, cc, c);
              llvm::SmallVector<OpFoldResult> strides(offsets.size(),
                                                      idx(nb, 1));
              firsts.push_back(tensor::InsertSliceOp::create(
                  nb, l, iter[j], iter[nl + j], offsets, sizes, strides));
            }
          FailureOr<ChunkStep> step = emitChunkStep(
              nb, l, bi, hi, c, iter.take_front(nl), *entryStates, true,
              parallelGradients ? llvm::ArrayRef<unsigned>()
                                : llvm::ArrayRef(allInputs));
          if (failed(step)) {
            status = failure();
            scf::YieldOp::create(nb, l, iter);
            return;
          }
          if (!parallelGradients)
            for (auto [s, grad] : llvm::enumerate(step->gradients))
              firsts.push_back(insertRows(nb, l, grad, iter[nl + s],
                                          step->start, step->rows));
          // ∂X₀ is written over the carried λ after λ's last read, so that
          // the loop keeps one buffer (a fresh one per iteration would need
          // a run-time alias check to be freed after the loop).
          llvm::SmallVector<Value> next;
          for (size_t j = 0; j < nl; ++j)
            next.push_back(
                linalg::CopyOp::create(nb, l, step->lambda[j], iter[j])
                    .getResult(0));
          llvm::append_range(next, firsts);
          scf::YieldOp::create(nb, l, next);
        });
    if (failed(status))
      return failure();

    b.setInsertionPointToStart(loop.getTerminator().getBody());
    for (size_t i = 0; i < numFirst; ++i) {
      auto [offsets, sizes, strides] = parallelGradients
                                           ? stackRowsPlace(b, bi, hi, live[i])
                                           : rowsPlace(b, bi, hi, i);
      tensor::ParallelInsertSliceOp::create(b, loc,
                                            backwardLoop.getResult(nl + i),
                                            outs[i], offsets, sizes, strides);
    }
    // The initial state's gradient: λ carried out of the first chunk (every
    // carried component is live here, checked above).
    for (auto [i, c] : llvm::enumerate(carried)) {
      if (op.getInit().empty())
        break;
      auto [offsets, sizes, strides] = statePlace(b, bi, hi, c);
      Value grad = backwardLoop.getResult(llvm::find(live, c) - live.begin());
      tensor::ParallelInsertSliceOp::create(b, loc, grad, outs[numFirst + i],
                                            offsets, sizes, strides);
    }
    enterPass(b, loc, body, false);
  }
  if (auto module = op->getParentOfType<ModuleOp>()) {
    std::string decision =
        spec.name + " backward: " +
        (!parallelGradients ? "two passes"
         : splitGradients   ? "parallel gradients split by input"
                            : "parallel gradients");
    if (valueTiles > 1)
      decision += std::string(parallelGradients ? ", the sequential passes"
                                                : ", the first") +
                  " in " + std::to_string(valueTiles) + " value tiles of " +
                  std::to_string(valueWidth) + " columns";
    recordChunking(module, decision);
  }
  llvm::SmallVector<Value> results(loop.getResults().drop_front(numFirst));
  if (!parallelGradients) {
    results.insert(results.begin(), loop.getResults().begin(),
                   loop.getResults().begin() + numFirst);
    op->replaceAllUsesWith(results);
    op->erase();
    return success();
  }

  // 3. The tokens' gradients, every chunk in parallel: in one pass, or
  // with `splitGradients` one pass per input (each recomputes the chunk's
  // summary and transposed combine, and holds fewer tiles at once).
  ValueRange lambdas = loop.getResults().take_front(nl);
  llvm::SmallVector<Value> gradients;
  llvm::SmallVector<llvm::ArrayRef<unsigned>> passes;
  if (splitGradients)
    for (unsigned i = 0; i < allInputs.size(); ++i)
      passes.push_back(llvm::ArrayRef(allInputs).slice(i, 1));
  else
    passes.push_back(allInputs);
  for (llvm::ArrayRef<unsigned> inputs : passes) {
    FailureOr<llvm::SmallVector<Value>> pass =
        emitGradientPass(b, inputs, *entryStates, lambdas);
    if (failed(pass))
      return failure();
    llvm::append_range(gradients, *pass);
  }
  results.insert(results.begin(), gradients.begin(), gradients.end());
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

FailureOr<llvm::SmallVector<Value>> PrefixVjpLowering::emitGradientPass(
    OpBuilder &b, llvm::ArrayRef<unsigned> inputs,
    llvm::ArrayRef<Value> entryStates, ValueRange lambdas) {
  Location loc = op.getLoc();
  llvm::SmallVector<Value> inits;
  for (unsigned i : inputs) {
    auto type = cast<RankedTensorType>(op.getInputs()[i].getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  auto gradients = scf::ForallOp::create(
      b, loc,
      llvm::ArrayRef<OpFoldResult>{idx(b, batch), idx(b, heads),
                                   idx(b, numChunks)},
      inits, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = gradients.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1),
        c = body->getArgument(2);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  OpBuilder hoist(op.getContext());
  hoist.setInsertionPointAfter(c0.getDefiningOp());
  decay = std::make_unique<DecayTiles>(hoist, loc, chunk, forward.gamma);
  llvm::SmallVector<Value> lambda;
  for (auto [j, cc] : llvm::enumerate(live))
    lambda.push_back(savedState(b, loc, lambdas[j], bi, hi, cc, c));
  FailureOr<ChunkStep> step =
      emitChunkStep(b, loc, bi, hi, c, lambda, entryStates, false, inputs);
  if (failed(step))
    return failure();
  b.setInsertionPointToStart(gradients.getTerminator().getBody());
  for (auto [j, grad] : llvm::enumerate(step->gradients)) {
    auto [offsets, sizes, strides] =
        rowsPlace(b, bi, hi, inputs[j], step->start, step->rows);
    tensor::ParallelInsertSliceOp::create(b, loc, grad,
                                          gradients.getRegionIterArgs()[j],
                                          offsets, sizes, strides);
  }
  return llvm::SmallVector<Value>(gradients.getResults());
}

} // namespace

LogicalResult mlir::hla::chunk::lowerPrefixVjp(PrefixVjpOp op, int64_t chunk,
                                               bool parallelGradients,
                                               int64_t valueTile,
                                               int64_t parallelism,
                                               bool splitGradients) {
  const MonoidSpec &spec = op.getMonoid().getSpec();
  std::string error;
  FailureOr<ChunkPlan> forward = buildChunkPlan(spec, error);
  if (failed(forward))
    return chunkError(op) << error;
  FailureOr<ChunkVjpPlan> backward = buildChunkVjpPlan(spec, error);
  if (failed(backward))
    return chunkError(op) << error;
  return PrefixVjpLowering(op, chunk, parallelGradients, valueTile, parallelism,
                           splitGradients, *forward, *backward)
      .lower();
}
