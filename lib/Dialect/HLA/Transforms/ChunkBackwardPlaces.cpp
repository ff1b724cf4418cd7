//===- ChunkBackwardPlaces.cpp - Where the backward's tiles are -*- C++ -*-===//
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The bookkeeping of hla.prefix_vjp's lowering (ChunkBackward.cpp): which
// value tile or run a pass builds, and where its tiles live in the stacks
// of saved states and λ, in the gradients' rows and in the [B, H, ...]
// state tensors.
//
//===----------------------------------------------------------------------===//

#include "ChunkBackward.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

LogicalResult PrefixVjpLowering::prepareValueTiles() {
  fullShapes = componentShapes;
  componentValueDims.assign(spec.components.size(), {});
  inputIsValue.assign(spec.inputs.size(), false);
  int64_t width =
      cast<RankedTensorType>(op.getCotangent().getType()).getDimSize(3);
  if (valueTile == 0 || (valueTile > 0 && valueTile >= width))
    return success();
  if (runs > 1) {
    if (valueTile == -1)
      return success();
    return chunkError(op) << "value-tile " << valueTile
                          << " needs whole sequences; the backward runs in "
                          << runs << " runs";
  }
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
PrefixVjpLowering::passBounds(OpBuilder &b, bool tiled, bool overRuns) const {
  llvm::SmallVector<OpFoldResult> bounds = {idx(b, batch), idx(b, heads)};
  if (tiled && valueTiles > 1)
    bounds.push_back(idx(b, valueTiles));
  else if (overRuns && runs > 1)
    bounds.push_back(idx(b, runs));
  return bounds;
}

std::pair<Value, Value> PrefixVjpLowering::runChunks(OpBuilder &b,
                                                     Location loc) const {
  if (!runIndex)
    return {arith::ConstantIndexOp::create(b, loc, 0),
            arith::ConstantIndexOp::create(b, loc, numChunks)};
  Value lo = runStart(b, loc, runIndex);
  Value hi = arith::MinSIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, lo,
                            arith::ConstantIndexOp::create(b, loc, perRun)),
      arith::ConstantIndexOp::create(b, loc, numChunks));
  return {lo, hi};
}

void PrefixVjpLowering::enterPass(OpBuilder &b, Location loc, Block *body,
                                  bool tiled, bool overRuns) {
  valueTileIndex = Value();
  runIndex = Value();
  if (!(tiled && valueTiles > 1) && overRuns && runs > 1)
    runIndex = body->getArgument(2);
  Value offset;
  if (tiled && valueTiles > 1) {
    valueTileIndex = body->getArgument(2);
    offset = arith::MulIOp::create(
        b, loc, valueTileIndex,
        arith::ConstantIndexOp::create(b, loc, valueWidth));
  }
  selectColumns(offset);
}

scf::ForallOp PrefixVjpLowering::beginPass(OpBuilder &b, ValueRange inits,
                                           bool tiled, bool overRuns) {
  Location loc = op.getLoc();
  auto loop = scf::ForallOp::create(b, loc, passBounds(b, tiled, overRuns),
                                    inits, std::nullopt);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  enterPass(b, loc, body, tiled, overRuns);
  startMasks(b, loc);
  return loop;
}

void PrefixVjpLowering::startMasks(OpBuilder &b, Location loc) {
  // The masks go right after this constant.
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  maskBuilder = std::make_unique<OpBuilder>(b.getContext());
  maskBuilder->setInsertionPointAfter(c0.getDefiningOp());
  decay = std::make_unique<DecayTiles>(*maskBuilder, loc, chunk, forward.gamma,
                                       forward.perHeadDecay);
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

ChunkTiles PrefixVjpLowering::loadChunk(OpBuilder &b, Location loc, Value batch,
                                        Value head, Value c, Value &start,
                                        Value &rows) {
  std::tie(start, rows) = bounds(b, loc, c);
  ChunkTiles tiles;
  tiles.chunk = chunk;
  tiles.length = rows;
  for (auto [i, input] : llvm::enumerate(op.getInputs()))
    tiles.tokens.push_back(
        loadRows(b, loc, input, batch, head, start, rows, inputIsValue[i]));
  if (forward.perHeadDecay)
    tiles.logDecay =
        DecayTiles::loadLogDecay(b, loc, op.getHeadParams()[0], head);
  return tiles;
}

std::pair<Value, Value> PrefixVjpLowering::bounds(OpBuilder &b, Location loc,
                                                  Value c) const {
  return chunkSpan(b, loc, c, chunk, length);
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
      stackedShape(fullShapes[c], stackChunks * (perTile(c) ? valueTiles : 1)));
  return RankedTensorType::get(stack, Float32Type::get(op->getContext()));
}

RankedTensorType PrefixVjpLowering::stackRowsType(unsigned c) const {
  // A run's slice holds its chunks' slots.
  return RankedTensorType::get(
      stackedShape(componentShapes[c], runIndex ? perRun : numChunks),
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
  // A per-tile component's copies follow one another along the stack, and
  // so do the runs' slots.
  OpFoldResult first = idx(b, 0);
  if (runIndex)
    first = OpFoldResult(arith::MulIOp::create(
        b, loc, runIndex, arith::ConstantIndexOp::create(b, loc, rows[0])));
  else if (perTile(c) && valueTileIndex)
    first = OpFoldResult(
        arith::MulIOp::create(b, loc, valueTileIndex,
                              arith::ConstantIndexOp::create(b, loc, rows[0])));
  llvm::SmallVector<OpFoldResult> at = {first};
  for (unsigned d = 1; d < rows.size(); ++d)
    at.push_back(columnOffset(b, loc, c, d, idx(b, 0)));
  return pairSlice(b, bi, hi, rows, at);
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
