//===- ChunkRewriter.cpp - The chunk rewriter core --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What every form and family of hla-chunk shares: shapes and chunk counts,
// the slot table of packed sequences, token tiles, the carried state and
// the loop over a sequence's chunks, the summaries and readout rows of one
// chunk (with causal isolation), and the final replacement of the chain.
//
//===----------------------------------------------------------------------===//

#include "ChunkRewriter.h"
#include "RunTimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;
using utils::IteratorType;

namespace mlir::hla::chunk {

Value loadChunkRows(OpBuilder &b, Location loc, Value operand,
                    llvm::ArrayRef<OpFoldResult> offsets, Value length,
                    int64_t chunk, int64_t width) {
  auto type = cast<RankedTensorType>(operand.getType());
  bool isScalar = type.getRank() == 3;
  llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), length, idx(b, 1)};
  llvm::SmallVector<OpFoldResult> strides(type.getRank(), idx(b, 1));
  llvm::SmallVector<int64_t> sliceShape = {ShapedType::kDynamic};
  llvm::SmallVector<int64_t> tileShape = {chunk};
  if (!isScalar) {
    sizes.push_back(idx(b, width));
    sliceShape.push_back(width);
    tileShape.push_back(width);
  }
  Type element = type.getElementType();
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(sliceShape, element), operand, offsets,
      sizes, strides);
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  Value padded = linalg::FillOp::create(
                     b, loc, zero,
                     Value(tensor::EmptyOp::create(b, loc, tileShape, element)))
                     .getResult(0);
  llvm::SmallVector<OpFoldResult> zeros(tileShape.size(), idx(b, 0));
  llvm::SmallVector<OpFoldResult> insertSizes = {length};
  if (!isScalar)
    insertSizes.push_back(idx(b, width));
  llvm::SmallVector<OpFoldResult> ones(tileShape.size(), idx(b, 1));
  padded = tensor::InsertSliceOp::create(b, loc, slice, padded, zeros,
                                         insertSizes, ones);
  TileBuilder tb(b, loc);
  return tb.castTo(padded, b.getF32Type());
}

void ChunkRewriter::prepareShapes() {
  SegmentOp segment = info.segment;
  carried = spec.getCarryComponents();
  numChunks = (info.length + chunk - 1) / chunk;

  // Sizes of every symbol, from the segment results.
  MonoidDimBinder binder;
  for (auto [c, result] : llvm::enumerate(segment.getResults())) {
    std::string ignored;
    (void)binder.bind(
        spec.components[c],
        cast<RankedTensorType>(result.getType()).getShape().drop_front(3),
        ignored);
  }
  for (unsigned c = 0; c < spec.components.size(); ++c)
    componentShapes.push_back(
        llvm::to_vector(binder.resolve(spec.components[c])));
  componentValueDims.assign(spec.components.size(), {});
  inputIsValue.assign(spec.inputs.size(), false);
  valueWidth = info.total ? 0 : info.outputType().getDimSize(3);
  valueTiles = 1;

  // Token inputs: segment operands (by monoid input), then readout inputs.
  operandOfInput.assign(spec.inputs.size(), Value());
  for (auto [i, input] : llvm::enumerate(spec.getTokenInputs()))
    operandOfInput[input] = segment.getInputs()[i];
  // LinSimp's readout input (the anchor features) is made per chunk.
  if (auto plain = dyn_cast<ReadoutOp>(info.readout))
    for (auto [i, input] : llvm::enumerate(spec.getReadoutInputs()))
      operandOfInput[input] = plain.getInputs()[i];

  // Packed sequences: chunks never straddle a sequence boundary, so each
  // sequence gets ceil(len / c) chunk slots; a table built at run time maps
  // slot -> (start token, length) and gives the scan its per-sequence chunk
  // offsets. ceil(T / c) + N slots always suffice.
  cuSeqlens = info.scan ? info.scan.getCuSeqlens() : info.total.getCuSeqlens();
  sequences = info.batch;
  if (cuSeqlens) {
    sequences = cast<RankedTensorType>(cuSeqlens.getType()).getDimSize(0) - 1;
    numChunks += sequences;
  }
}

void recordChunking(ModuleOp module, llvm::StringRef decision) {
  llvm::SmallVector<Attribute> all;
  if (auto old = module->getAttrOfType<ArrayAttr>("hla.chunking"))
    llvm::append_range(all, old.getValue());
  all.push_back(StringAttr::get(module.getContext(), decision));
  module->setAttr("hla.chunking", ArrayAttr::get(module.getContext(), all));
}

std::optional<std::string> separableValueSymbol(const MonoidSpec &spec) {
  std::string error;
  const MonoidReadout *num = spec.findReadout("num");
  if (!num || num->expr.empty())
    return std::nullopt;
  FailureOr<MonoidMatrixShape> numShape =
      spec.inferTermShape(num->expr.front(), error);
  if (failed(numShape) || numShape->cols == "1")
    return std::nullopt;
  std::string symbol = numShape->cols;
  auto mentions = [&](const MonoidSlot *slot) {
    return slot && llvm::is_contained(slot->shape, symbol);
  };
  // A term reading one slot with value columns and keeping them: its
  // column j depends only on that slot's column j.
  auto keepsColumnsApart = [&](const MonoidExpr &expr) {
    for (const MonoidTerm &term : expr) {
      unsigned reading = 0;
      for (const MonoidFactor &factor : term.factors)
        reading += mentions(spec.getFactorSlot(factor));
      FailureOr<MonoidMatrixShape> shape = spec.inferTermShape(term, error);
      if (failed(shape))
        return false;
      bool keeps = shape->rows == symbol || shape->cols == symbol;
      if (reading > 1 || (reading == 1) != keeps)
        return false;
    }
    return true;
  };
  bool apart = true;
  for (const MonoidExpr &expr : spec.token)
    apart &= keepsColumnsApart(expr);
  for (const MonoidExpr &expr : spec.combine)
    apart &= keepsColumnsApart(expr);
  for (const MonoidReadout &readout : spec.readouts)
    apart &= keepsColumnsApart(readout.expr);
  if (!apart)
    return std::nullopt;
  return symbol;
}

LogicalResult ChunkRewriter::prepareValueTiles() {
  int64_t width = info.outputType().getDimSize(3);
  if (valueTile <= 0 || valueTile >= width)
    return success();
  if (width % valueTile != 0)
    return chunkError(info.readout) << "value-tile " << valueTile
                                    << " must divide the value width " << width;
  if (info.anchor)
    return chunkError(info.readout)
           << "value-tile: LinSimp's anchor window is not cut by value";
  std::optional<std::string> symbol = separableValueSymbol(spec);
  if (!symbol)
    return chunkError(info.readout)
           << "value-tile: a rule of monoid '" << spec.name
           << "' mixes value columns, so they cannot be computed apart";

  valueWidth = valueTile;
  valueTiles = width / valueTile;
  for (unsigned c = 0; c < spec.components.size(); ++c)
    for (auto [d, name] : llvm::enumerate(spec.components[c].shape))
      if (name == *symbol) {
        componentValueDims[c].push_back(d);
        componentShapes[c][d] = valueTile;
      }
  for (unsigned i = 0; i < spec.inputs.size(); ++i) {
    llvm::ArrayRef<std::string> shape = spec.inputs[i].shape;
    inputIsValue[i] = !shape.empty() && shape.back() == *symbol;
  }
  return success();
}

OpFoldResult ChunkRewriter::valueColumn(OpBuilder &b) const {
  return valueOffset ? OpFoldResult(valueOffset) : idx(b, 0);
}

void ChunkRewriter::prepareTiles(OpBuilder &b, OpBuilder &hoist, Location loc) {
  // Constant tiles are built once, ahead of the chunk loops that use them.
  // Where the caller has no separate hoisting point (the fused and
  // segmented forms build them inside the (sequence, head) loop), they go
  // before a marker placed here: the builder `b` moves on into the chunk
  // loops, and a tile first asked for deep inside one of them (LinSimp's
  // anchor loop, one branch of causal isolation) must still dominate every
  // later use.
  OpBuilder *at = &hoist;
  if (&hoist == &b) {
    Operation *marker = arith::ConstantIndexOp::create(b, loc, 0);
    ownHoist = std::make_unique<OpBuilder>(marker);
    at = ownHoist.get();
  }
  decay = std::make_unique<DecayTiles>(*at, loc, chunk, plan.gamma,
                                       plan.perHeadDecay);
  if (cuSeqlens)
    std::tie(slotStart, slotLength, chunkOffsets, slotSequence) =
        buildChunkTable(b, loc, cuSeqlens, sequences, numChunks);
}

void ChunkRewriter::checkOffsets(OpBuilder &b, Location loc) {
  if (!cuSeqlens)
    return;
  enum : int64_t { kStart = 1, kEnd = 2, kOrder = 4 };
  auto offsets = [&](int64_t from) -> Value {
    return tensor::ExtractSliceOp::create(
        b, loc, cuSeqlens, ArrayRef<OpFoldResult>{b.getIndexAttr(from)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(sequences)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  };
  // Per sequence s: [cu[s], cu[s + 1]).
  emitRunTimeChecks(
      b, loc, ValueRange{offsets(0), offsets(1)},
      [&](OpBuilder &nb, Location l, ValueRange bounds, Value s) -> Value {
        Type i64 = nb.getI64Type();
        auto constant = [&](int64_t v) -> Value {
          return arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(v));
        };
        auto wide = [&](Value v) -> Value {
          return v.getType() == i64 ? v : arith::ExtSIOp::create(nb, l, i64, v);
        };
        Value begin = wide(bounds[0]), end = wide(bounds[1]);
        auto flag = [&](Value broken, int64_t bit) -> Value {
          return arith::SelectOp::create(nb, l, broken, constant(bit),
                                         constant(0));
        };
        auto both = [&](Value x, Value y) -> Value {
          return arith::AndIOp::create(nb, l, x, y);
        };
        auto is = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
          return arith::CmpIOp::create(nb, l, p, x, y);
        };
        Value firstSequence = is(arith::CmpIPredicate::eq, s,
                                 arith::ConstantIndexOp::create(nb, l, 0));
        Value lastSequence =
            is(arith::CmpIPredicate::eq, s,
               arith::ConstantIndexOp::create(nb, l, sequences - 1));
        Value code = constant(0);
        for (Value bit :
             {flag(both(firstSequence,
                        is(arith::CmpIPredicate::ne, begin, constant(0))),
                   kStart),
              flag(both(lastSequence, is(arith::CmpIPredicate::ne, end,
                                         constant(info.length))),
                   kEnd),
              flag(is(arith::CmpIPredicate::sgt, begin, end), kOrder)})
          code = arith::OrIOp::create(nb, l, code, bit);
        return code;
      },
      {{kStart, "hla: cu_seqlens[0] must be 0"},
       {kEnd, "hla: cu_seqlens must end at the packed length T"},
       {kOrder, "hla: cu_seqlens must not decrease"}});
}

std::tuple<Value, Value, Value, Value>
ChunkRewriter::buildChunkTable(OpBuilder &b, Location loc, Value cuSeqlens,
                               int64_t sequences, int64_t slots) {
  Type i64 = b.getI64Type();
  auto zeros = [&](int64_t n) -> Value {
    Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
    return linalg::FillOp::create(
               b, loc, zero, Value(tensor::EmptyOp::create(b, loc, n, i64)))
        .getResult(0);
  };
  auto offsetAt = [&](OpBuilder &nb, Location l, Value i) -> Value {
    Value v = tensor::ExtractOp::create(nb, l, cuSeqlens, ValueRange{i});
    if (v.getType() != i64)
      v = arith::ExtSIOp::create(nb, l, i64, v);
    return v;
  };
  auto constant = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(v));
  };
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value numSequences = arith::ConstantIndexOp::create(b, loc, sequences);
  llvm::SmallVector<Value> init = {zeros(slots), zeros(slots),
                                   zeros(sequences + 1), constant(b, loc, 0),
                                   zeros(slots)};
  auto outer = scf::ForOp::create(
      b, loc, c0, numSequences, c1, init,
      [&](OpBuilder &nb, Location l, Value s, ValueRange iter) {
        Value begin = offsetAt(nb, l, s);
        Value end =
            offsetAt(nb, l, arith::AddIOp::create(nb, l, s, c1).getResult());
        Value offset = iter[3];
        Value offsets =
            tensor::InsertOp::create(nb, l, offset, iter[2], ValueRange{s});
        // ceil((end - begin) / c) chunks for this sequence.
        Value length = arith::SubIOp::create(nb, l, end, begin);
        Value count =
            arith::CeilDivSIOp::create(nb, l, length, constant(nb, l, chunk));
        Value countIndex =
            arith::IndexCastOp::create(nb, l, nb.getIndexType(), count);
        Value s64 = arith::IndexCastOp::create(nb, l, i64, s);
        auto inner = scf::ForOp::create(
            nb, l, c0, countIndex, c1, ValueRange{iter[0], iter[1], iter[4]},
            [&](OpBuilder &ib, Location il, Value j, ValueRange tables) {
              Value j64 = arith::IndexCastOp::create(ib, il, i64, j);
              Value slot = arith::IndexCastOp::create(
                  ib, il, ib.getIndexType(),
                  arith::AddIOp::create(ib, il, offset, j64).getResult());
              Value start = arith::AddIOp::create(
                  ib, il, begin,
                  arith::MulIOp::create(ib, il, j64, constant(ib, il, chunk))
                      .getResult());
              Value size = arith::MinSIOp::create(
                  ib, il, constant(ib, il, chunk),
                  arith::SubIOp::create(ib, il, end, start).getResult());
              Value starts = tensor::InsertOp::create(ib, il, start, tables[0],
                                                      ValueRange{slot});
              Value sizes = tensor::InsertOp::create(ib, il, size, tables[1],
                                                     ValueRange{slot});
              Value owners = tensor::InsertOp::create(ib, il, s64, tables[2],
                                                      ValueRange{slot});
              scf::YieldOp::create(ib, il, ValueRange{starts, sizes, owners});
            });
        Value next = arith::AddIOp::create(nb, l, offset, count);
        scf::YieldOp::create(nb, l,
                             ValueRange{inner.getResult(0), inner.getResult(1),
                                        offsets, next, inner.getResult(2)});
      });
  Value offsets = tensor::InsertOp::create(
      b, loc, outer.getResult(3), outer.getResult(2), ValueRange{numSequences});
  return {outer.getResult(0), outer.getResult(1), offsets, outer.getResult(4)};
}

Value ChunkRewriter::loadTile(OpBuilder &b, Location loc, unsigned input,
                              Value operand, Value batch, Value start,
                              Value length, Value head) {
  auto type = cast<RankedTensorType>(operand.getType());
  // Grouped heads: query head h reads kv head h / (H / H_i).
  int64_t groups = info.heads / type.getDimSize(2);
  Value kvHead = head;
  if (groups != 1)
    kvHead = arith::DivUIOp::create(
        b, loc, head, arith::ConstantIndexOp::create(b, loc, groups));
  bool isScalar = type.getRank() == 3;
  int64_t width = isScalar ? 0 : type.getDimSize(3);
  // The value input gives the current value tile's columns.
  bool valueColumns = valueTiles > 1 && !isScalar &&
                      input < inputIsValue.size() && inputIsValue[input] &&
                      operand == operandOfInput[input];
  if (valueColumns)
    width = valueWidth;
  llvm::SmallVector<OpFoldResult> offsets = {batch, start, kvHead};
  if (!isScalar)
    offsets.push_back(valueColumns ? valueColumn(b) : idx(b, 0));
  return loadChunkRows(b, loc, operand, offsets, length, chunk, width);
}

std::pair<Value, Value> ChunkRewriter::chunkBounds(OpBuilder &b, Location loc,
                                                   Value n) {
  if (cuSeqlens) {
    auto read = [&](Value table) -> Value {
      Value v = tensor::ExtractOp::create(b, loc, table, ValueRange{n});
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    return {read(slotStart), read(slotLength)};
  }
  Value c = arith::ConstantIndexOp::create(b, loc, chunk);
  Value start = arith::MulIOp::create(b, loc, n, c);
  Value remaining = arith::SubIOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, info.length), start);
  Value length = arith::MinSIOp::create(b, loc, remaining, c);
  return {start, length};
}

void ChunkRewriter::loadTokens(OpBuilder &b, Location loc, ChunkTiles &tiles,
                               Value batch, Value start, Value head,
                               llvm::ArrayRef<unsigned> inputs) {
  tiles.batch = batch;
  tiles.start = start;
  tiles.head = head;
  if (plan.perHeadDecay)
    tiles.logDecay =
        DecayTiles::loadLogDecay(b, loc, info.segment.getHeadParams()[0], head);
  tiles.tokens.assign(spec.inputs.size(), Value());
  for (unsigned input : inputs)
    if (operandOfInput[input])
      tiles.tokens[input] = tokenTile(b, loc, input, tiles);
}

Value ChunkRewriter::tokenTile(OpBuilder &b, Location loc, unsigned input,
                               const ChunkTiles &tiles) {
  Value operand = operandOfInput[input];
  // Random features of keys are made per chunk from the key tile: no
  // [B, T, H, m] tensor of them is ever stored.
  if (auto features = operand.getDefiningOp<FeatureMapOp>())
    return emitKeyFeatures(b, loc,
                           loadTile(b, loc, input, features.getInput(),
                                    tiles.batch, tiles.start, tiles.length,
                                    tiles.head),
                           omegaF32(features.getOmega()),
                           features.getScale().convertToDouble(), tiles.length);
  return loadTile(b, loc, input, operand, tiles.batch, tiles.start,
                  tiles.length, tiles.head);
}

llvm::SmallVector<unsigned>
ChunkRewriter::usedInputs(llvm::ArrayRef<PlannedOutput> outputs) const {
  llvm::SmallVector<unsigned> inputs;
  if (deltaRule) {
    for (unsigned i = 0; i < spec.inputs.size(); ++i)
      inputs.push_back(i);
    return inputs;
  }
  for (const PlannedOutput &out : outputs)
    for (const IndexTerm &t : out.terms)
      for (const ChainFactor &f : t.chain)
        if (f.kind == ChainFactor::Kind::Token &&
            !llvm::is_contained(inputs, f.slot))
          inputs.push_back(f.slot);
  return inputs;
}

FailureOr<Value> ChunkRewriter::emitOutput(TileBuilder &tb,
                                           const PlannedOutput &out,
                                           const ChunkTiles &tiles,
                                           bool isSummary,
                                           llvm::ArrayRef<int64_t> shape) {
  return emitTermSum(tb, spec, tiles, *decay, info.readout, out.terms,
                     isSummary, shape);
}

FailureOr<llvm::SmallVector<Value>>
ChunkRewriter::emitSummaries(OpBuilder &b, Location loc,
                             const ChunkTiles &tiles) {
  if (deltaRule)
    return emitDeltaRule(b, loc, tiles, DeltaPart::Map);
  return emitChunkSummaries(b, loc, spec, plan, tiles, *decay, info.readout,
                            componentShapes);
}

FailureOr<Value> ChunkRewriter::emitReadoutRows(OpBuilder &b, Location loc,
                                                const ChunkTiles &tiles) {
  if (info.anchor)
    return emitAnchorRows(b, loc, tiles);
  if (deltaRule) {
    unsigned s = *spec.findComponent("S");
    FailureOr<llvm::SmallVector<Value>> rows =
        emitDeltaRule(b, loc, tiles, DeltaPart::Rows, tiles.carried[s]);
    if (failed(rows))
      return failure();
    return TileBuilder(b, loc).castTo(rows->front(),
                                      info.outputType().getElementType());
  }
  RankedTensorType outType = info.outputType();
  int64_t width = valueWidth;
  TileBuilder tb(b, loc);
  Value num, den;
  for (const PlannedOutput &out : plan.readouts) {
    llvm::SmallVector<int64_t> shape = {chunk};
    if (out.name == "num")
      shape.push_back(width);
    FailureOr<Value> v = emitOutput(tb, out, tiles, false, shape);
    if (failed(v))
      return failure();
    (out.name == "num" ? num : den) = *v;
  }
  Value result = num;
  if (den) {
    // num / (den + eps), row by row.
    double eps = cast<ReadoutOp>(info.readout).getEpsAttr().getValueAsDouble();
    AffineMap id = b.getMultiDimIdentityMap(1);
    Value inverse = tb.generic(
        {den}, tb.empty({chunk}), {id, id}, {IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value shifted = arith::AddFOp::create(
              nb, l, args[0],
              arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(eps)));
          Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1));
          return arith::DivFOp::create(nb, l, one, shifted);
        });
    result = tb.scaleRows(num, inverse);
  }
  return tb.castTo(result, outType.getElementType());
}

Value ChunkRewriter::firstNonFiniteRow(OpBuilder &b, Location loc,
                                       llvm::ArrayRef<Value> tiles) {
  TileBuilder tb(b, loc);
  Type f32 = b.getF32Type();
  // The row indices are small integers: exact in f32, which keeps the
  // reduction an ordinary float min.
  Value none = tb.scalar(double(chunk));
  Value first =
      linalg::FillOp::create(
          b, loc, none,
          Value(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, f32)))
          .getResult(0);
  for (Value tile : tiles) {
    int64_t rank = cast<RankedTensorType>(tile.getType()).getRank();
    MLIRContext *ctx = b.getContext();
    AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap scalar = AffineMap::get(rank, 0, {}, ctx);
    llvm::SmallVector<IteratorType> its(rank, IteratorType::reduction);
    first = tb.generic(
        {tile}, first, {all, scalar}, its,
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value magnitude = math::AbsFOp::create(nb, l, args[0]);
          Value inf = arith::ConstantOp::create(
              nb, l,
              nb.getF32FloatAttr(std::numeric_limits<float>::infinity()));
          // False for NaN (unordered) and for ±inf.
          Value finite = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OLT,
                                               magnitude, inf);
          Value row = arith::SIToFPOp::create(
              nb, l, f32,
              arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                         linalg::IndexOp::create(nb, l, 0)));
          Value lower = arith::MinimumFOp::create(nb, l, args[1], row);
          return arith::SelectOp::create(nb, l, finite, args[1], lower);
        });
  }
  Value value = tensor::ExtractOp::create(b, loc, first, ValueRange{});
  Value asInt = arith::FPToSIOp::create(b, loc, b.getI64Type(), value);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), asInt);
}

FailureOr<Value> ChunkRewriter::emitCausalRows(OpBuilder &b, Location loc,
                                               const ChunkTiles &tiles) {
  FailureOr<Value> rows = emitReadoutRows(b, loc, tiles);
  if (failed(rows) || !causalIsolation)
    return rows;
  llvm::SmallVector<Value> checked;
  for (Value t : tiles.tokens)
    if (t)
      checked.push_back(t);
  if (checked.empty() && !info.anchor)
    return rows;
  // Σ x · 0: NaN exactly when an x is NaN or ±inf (the padding rows are
  // zeros). The chunk is read out again only when a plain row is not
  // finite: a non-finite token reaches a row before it only through a
  // zero weight (the causal masks multiply), and 0 · NaN and 0 · inf are
  // NaN, so a row it spoiled is not finite; rows it does not reach are
  // exact. One multiply-add per output value on the common path, on values
  // a GPU holds in registers; the poisoned row is only looked for in the
  // branch. (A row that overflows also takes the branch and comes out the
  // same.) LinSimp's query and anchors reach no row before their own (its
  // window holds earlier anchors only) and make their own row non-finite
  // (the row's features, or u times them, are NaN or ±inf), so the same
  // check holds; they are read for the search in the branch only.
  llvm::SmallVector<Value> sums = {*rows};
  TileBuilder tb(b, loc);
  Value total =
      linalg::FillOp::create(b, loc, tb.scalar(0.0),
                             Value(tensor::EmptyOp::create(
                                 b, loc, ArrayRef<int64_t>{}, b.getF32Type())))
          .getResult(0);
  // One sum over all tiles of a shape (q, k, v alike): one pass, and on a
  // GPU one block-wide reduction with its barriers, per shape.
  llvm::MapVector<Type, llvm::SmallVector<Value>> byShape;
  for (Value tile : sums)
    byShape[tile.getType()].push_back(tile);
  for (auto &[type, group] : byShape) {
    int64_t rank = cast<RankedTensorType>(type).getRank();
    MLIRContext *ctx = b.getContext();
    llvm::SmallVector<IteratorType> its(rank, IteratorType::reduction);
    llvm::SmallVector<AffineMap> maps(
        group.size(), AffineMap::getMultiDimIdentityMap(rank, ctx));
    maps.push_back(AffineMap::get(rank, 0, {}, ctx));
    total = tb.generic(
        group, total, maps, its,
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Type f32 = nb.getF32Type();
          Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
          Value terms;
          for (Value x : args.drop_back()) {
            if (x.getType() != f32)
              x = arith::ExtFOp::create(nb, l, f32, x);
            Value nanIfNotFinite = arith::MulFOp::create(nb, l, x, zero);
            terms =
                terms
                    ? Value(arith::AddFOp::create(nb, l, terms, nanIfNotFinite))
                    : nanIfNotFinite;
          }
          return arith::AddFOp::create(nb, l, args.back(), terms);
        });
  }
  Value sum = tensor::ExtractOp::create(b, loc, total, ValueRange{});
  Value poisoned =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, sum, sum);
  auto branch = scf::IfOp::create(b, loc, TypeRange{rows->getType()}, poisoned,
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, *rows);

  b.setInsertionPointToStart(branch.thenBlock());
  // Keys' random features are made again from the keys here: the branch
  // then reads no tile computed before it (on a GPU the plain features
  // would otherwise be kept for it, in shared memory, through the plain
  // read-out).
  ChunkTiles fresh = tiles;
  checked.clear();
  for (auto [input, tile] : llvm::enumerate(fresh.tokens)) {
    if (!tile)
      continue;
    if (operandOfInput[input].getDefiningOp<FeatureMapOp>())
      tile = tokenTile(b, loc, input, tiles);
    checked.push_back(tile);
  }
  if (info.anchor) {
    // LinSimp reads its query and anchor operands directly.
    AnchorReadoutOp op = info.anchor;
    for (Value operand :
         {op.getQuery(), op.getAnchorKey(), op.getAnchorValue()})
      checked.push_back(loadTile(b, loc, 0, operand, tiles.batch, tiles.start,
                                 tiles.length, tiles.head));
  }
  Value first = firstNonFiniteRow(b, loc, checked);
  // The chunk as `first` tokens: the rows from `first` on zeroed.
  auto keepRowsBelow = [&](Value tile, Value bound) -> Value {
    auto type = cast<RankedTensorType>(tile.getType());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    llvm::SmallVector<IteratorType> its(type.getRank(), IteratorType::parallel);
    return tb.generic(
        {tile},
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType()),
        {id, id}, its, [&](OpBuilder &nb, Location l, ValueRange args) {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value below = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                              row, bound);
          Value zero = arith::ConstantOp::create(
              nb, l, nb.getFloatAttr(type.getElementType(), 0.0));
          return arith::SelectOp::create(nb, l, below, args[0], zero);
        });
  };
  ChunkTiles clean = fresh;
  clean.length = first;
  for (Value &t : clean.tokens)
    if (t)
      t = keepRowsBelow(t, first);
  FailureOr<Value> cleanRows = emitReadoutRows(b, loc, clean);
  if (failed(cleanRows))
    return failure();
  // Rows [0, first) from the clean read-out; the rest NaN (each depends on
  // the non-finite token, so none is finite in the plain read-out either).
  // The plain rows are not read here, so that on a GPU they are not alive
  // across the second read-out (which keeps hla2 within its registers); the
  // result is copied over them, so that both branches yield their buffer
  // (no run-time ownership checks in bufferization's deallocation).
  auto rowsType = cast<RankedTensorType>(rows->getType());
  AffineMap id = b.getMultiDimIdentityMap(rowsType.getRank());
  llvm::SmallVector<IteratorType> its(rowsType.getRank(),
                                      IteratorType::parallel);
  Value merged = tb.generic(
      {*cleanRows},
      tensor::EmptyOp::create(b, loc, rowsType.getShape(),
                              rowsType.getElementType()),
      {id, id}, its, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value below =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, row, first);
        auto element = cast<FloatType>(rowsType.getElementType());
        Value nan = arith::ConstantOp::create(
            nb, l,
            nb.getFloatAttr(
                element, llvm::APFloat::getNaN(element.getFloatSemantics())));
        return arith::SelectOp::create(nb, l, below, args[0], nan);
      });
  scf::YieldOp::create(
      b, loc, linalg::CopyOp::create(b, loc, merged, *rows).getResult(0));
  return branch.getResult(0);
}

llvm::SmallVector<Value> ChunkRewriter::initialCarry(OpBuilder &b, Location loc,
                                                     Value sequence,
                                                     Value head) {
  llvm::SmallVector<Value> carry;
  Type f32 = b.getF32Type();
  for (auto [i, c] : llvm::enumerate(carried)) {
    llvm::ArrayRef<int64_t> shape = componentShapes[c];
    auto type = RankedTensorType::get(shape, f32);
    if (info.scan.getInit().empty()) {
      carry.push_back(buildMonoidIdentity(b, loc, spec, c, type));
      continue;
    }
    llvm::SmallVector<OpFoldResult> offsets = {sequence, head};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1)};
    for (auto [d, s] : llvm::enumerate(shape)) {
      bool value = llvm::is_contained(componentValueDims[c], d);
      offsets.push_back(value ? valueColumn(b) : idx(b, 0));
      sizes.push_back(idx(b, s));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    carry.push_back(tensor::ExtractSliceOp::create(
        b, loc, type, info.scan.getInit()[i], offsets, sizes, strides));
  }
  return carry;
}

llvm::SmallVector<Type> ChunkRewriter::componentTypes(OpBuilder &b) const {
  llvm::SmallVector<Type> types;
  for (llvm::ArrayRef<int64_t> shape : componentShapes)
    types.push_back(RankedTensorType::get(shape, b.getF32Type()));
  return types;
}

Value ChunkRewriter::emptyPerRun(OpBuilder &b, Location loc, unsigned c,
                                 int64_t segments) const {
  llvm::SmallVector<int64_t> shape = {info.batch, segments, info.heads};
  llvm::append_range(shape, componentShapes[c]);
  return tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
}

Value ChunkRewriter::componentSlice(OpBuilder &b, Location loc, Value tensor,
                                    unsigned c,
                                    llvm::ArrayRef<OpFoldResult> lead) {
  llvm::SmallVector<OpFoldResult> offsets(lead), sizes(lead.size(), idx(b, 1));
  for (auto [d, size] : llvm::enumerate(componentShapes[c])) {
    bool value = llvm::is_contained(componentValueDims[c], d);
    offsets.push_back(value ? valueColumn(b) : idx(b, 0));
    sizes.push_back(idx(b, size));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(componentShapes[c], b.getF32Type()), tensor,
      offsets, sizes, strides);
}

void ChunkRewriter::insertComponent(OpBuilder &b, Location loc, Value value,
                                    Value dest, unsigned c,
                                    llvm::ArrayRef<OpFoldResult> lead) {
  llvm::SmallVector<OpFoldResult> offsets(lead), sizes(lead.size(), idx(b, 1));
  for (auto [d, size] : llvm::enumerate(componentShapes[c])) {
    bool value = llvm::is_contained(componentValueDims[c], d);
    offsets.push_back(value ? valueColumn(b) : idx(b, 0));
    sizes.push_back(idx(b, size));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  tensor::ParallelInsertSliceOp::create(b, loc, value, dest, offsets, sizes,
                                        strides);
}

ChunkRewriter::SequenceSlots
ChunkRewriter::sequenceSlots(OpBuilder &b, Location loc, Value si) {
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  if (!cuSeqlens)
    return {si, c0, arith::ConstantIndexOp::create(b, loc, info.length), c0,
            arith::ConstantIndexOp::create(b, loc, numChunks)};
  auto at = [&](Value table, Value i) -> Value {
    Value v = tensor::ExtractOp::create(b, loc, table, ValueRange{i});
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  };
  Value next = arith::AddIOp::create(b, loc, si,
                                     arith::ConstantIndexOp::create(b, loc, 1));
  Value first = at(cuSeqlens, si);
  return {c0, first, arith::SubIOp::create(b, loc, at(cuSeqlens, next), first),
          at(chunkOffsets, si), at(chunkOffsets, next)};
}

FailureOr<scf::ForOp> ChunkRewriter::emitChunkLoop(
    OpBuilder &b, Location loc, Value batch, Value head, Value lo, Value hi,
    llvm::ArrayRef<Value> carry, Value rows, Value first, bool allComponents,
    llvm::ArrayRef<unsigned> inputs, Value sequence, Value sequenceStart) {
  int64_t width = valueWidth;
  RankedTensorType rowsType;
  if (rows)
    rowsType = RankedTensorType::get(
        {ShapedType::kDynamic, width},
        cast<RankedTensorType>(rows.getType()).getElementType());
  llvm::SmallVector<Type> summaryTypes = componentTypes(b);
  llvm::SmallVector<Value> iterInit(carry);
  if (rows)
    iterInit.push_back(rows);
  size_t k = carry.size();
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);

  bool failedEmission = false;
  auto loop = scf::ForOp::create(
      b, loc, lo, hi, c1, iterInit,
      [&](OpBuilder &nb, Location l, Value n, ValueRange iter) {
        auto [start, length] = chunkBounds(nb, l, n);
        ChunkTiles tiles;
        tiles.chunk = chunk;
        tiles.length = length;
        loadTokens(nb, l, tiles, batch, start, head, inputs);
        tiles.sequence = sequence;
        tiles.sequenceStart = sequenceStart;
        llvm::SmallVector<Value> next;
        Value written;
        if (rows) {
          tiles.carried.assign(spec.components.size(), Value());
          for (auto [i, c] : llvm::enumerate(carried))
            tiles.carried[c] = iter[i];
          FailureOr<Value> result = emitCausalRows(nb, l, tiles);
          if (failed(result)) {
            failedEmission = true;
            scf::YieldOp::create(nb, l, iter);
            return;
          }
          Value chunkRows = tensor::ExtractSliceOp::create(
              nb, l, rowsType, *result,
              llvm::ArrayRef<OpFoldResult>{idx(nb, 0), idx(nb, 0)},
              llvm::ArrayRef<OpFoldResult>{length, idx(nb, width)},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)});
          Value offset = arith::SubIOp::create(nb, l, start, first);
          written = tensor::InsertSliceOp::create(
              nb, l, chunkRows, iter[k],
              llvm::ArrayRef<OpFoldResult>{offset, idx(nb, 0)},
              llvm::ArrayRef<OpFoldResult>{length, idx(nb, width)},
              llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)});
        }
        FailureOr<llvm::SmallVector<Value>> summaries =
            emitSummaries(nb, l, tiles);
        if (failed(summaries)) {
          failedEmission = true;
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        if (deltaRule && !allComponents) {
          // KDA's state moves on as e^{Γ_last} ⊙ S + K̃ᵀ (U − W S), the
          // rows' U − W S reused: two products fewer than A S + B, whose
          // A = Diag(e^{Γ_last}) − K̃ᵀ W is a product of its own.
          FailureOr<llvm::SmallVector<Value>> state =
              emitDeltaRule(nb, l, tiles, DeltaPart::NextState, iter.front());
          if (failed(state)) {
            failedEmission = true;
            scf::YieldOp::create(nb, l, iter);
            return;
          }
          next = *state;
        } else if (allComponents)
          next = llvm::SmallVector<Value>(
              CombineOp::create(nb, l, TypeRange(summaryTypes), info.monoid,
                                iter.take_front(k), *summaries)
                  .getResults());
        else
          next = ::mlir::hla::combineCarried(
              nb, l, info.monoid, iter.take_front(k), *summaries, summaryTypes);
        // The new state is copied into the carried one: the loop then
        // updates one buffer per component in place instead of yielding a
        // fresh allocation per chunk (which bufferization could only free
        // with run-time ownership checks).
        for (size_t i = 0; i < k; ++i)
          next[i] =
              linalg::CopyOp::create(nb, l, next[i], iter[i]).getResult(0);
        if (rows)
          next.push_back(written);
        scf::YieldOp::create(nb, l, next);
      });
  if (failedEmission)
    return failure();
  return loop;
}

void ChunkRewriter::finish(OpBuilder &, Location loc, Value output,
                           llvm::ArrayRef<Value> finalStates) {
  // New ops go where the chain's readout was: after the chunk loops.
  OpBuilder b(info.readout);
  llvm::SmallVector<Value> results = {output};
  if (info.anchor && !info.anchor.getFinalAnchors().empty())
    llvm::append_range(results, emitFinalAnchors(b, loc));
  info.readout->replaceAllUsesWith(results);
  for (auto [old, now] : llvm::zip(info.scan.getFinal(), finalStates))
    old.replaceAllUsesWith(now);
  info.readout->erase();
  info.scan.erase();
  Operation *segment = info.segment;
  llvm::SmallVector<Operation *> producers;
  for (Value input : info.segment.getInputs())
    if (auto features = input.getDefiningOp<FeatureMapOp>())
      producers.push_back(features);
  segment->erase();
  // Feature maps folded into the chunk loops.
  for (Operation *op : producers)
    if (op->use_empty())
      op->erase();
}

} // namespace mlir::hla::chunk
