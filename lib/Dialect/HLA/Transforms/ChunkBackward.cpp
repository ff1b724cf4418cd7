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
  PrefixVjpLowering(PrefixVjpOp op, int64_t chunk, const ChunkPlan &forward,
                    const ChunkVjpPlan &backward)
      : op(op), spec(op.getMonoid().getSpec()), chunk(chunk), forward(forward),
        backward(backward) {}

  LogicalResult lower();

private:
  /// The chunk's rows [start, start + length) of a [B, T, H, ...] operand,
  /// zero-padded to `chunk` rows, f32.
  Value loadRows(OpBuilder &b, Location loc, Value operand, Value batch,
                 Value head, Value start, Value length);
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

  PrefixVjpOp op;
  const MonoidSpec &spec;
  int64_t chunk;
  const ChunkPlan &forward;
  const ChunkVjpPlan &backward;
  std::unique_ptr<DecayTiles> decay;
  llvm::SmallVector<llvm::SmallVector<int64_t>> componentShapes;
  llvm::SmallVector<unsigned> carried;
  int64_t batch = 0, length = 0, heads = 0, numChunks = 0;
};

Value PrefixVjpLowering::loadRows(OpBuilder &b, Location loc, Value operand,
                                  Value batchIndex, Value head, Value start,
                                  Value rows) {
  auto type = cast<RankedTensorType>(operand.getType());
  llvm::SmallVector<OpFoldResult> offsets = {batchIndex, start, head};
  int64_t width = 0;
  if (type.getRank() == 4) {
    offsets.push_back(idx(b, 0));
    width = type.getDimSize(3);
  }
  return loadChunkRows(b, loc, operand, offsets, rows, chunk, width);
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

  unsigned n = spec.components.size();
  const MonoidReadout *den = spec.findReadout("den");
  unsigned numIndex = 0, denIndex = 0;
  for (auto [i, r] : llvm::enumerate(spec.readouts)) {
    if (r.name == "num")
      numIndex = i;
    else if (r.name == "den")
      denIndex = i;
    else
      return chunkError(op)
             << "readout '" << r.name << "' is neither num nor den";
  }
  bool withStates = !op.getInit().empty() || !op.getFinalCotangent().empty();
  if (withStates)
    for (unsigned c : carried)
      if (!backward.differentiable[c])
        return chunkError(op)
               << "carried component '" << spec.components[c].name
               << "' depends on no input: the gradient of a "
                  "state through it is not derived";
  MonoidAttr auxMonoid =
      MonoidAttr::get(ctx, transposedCombineMonoid(backward));
  const MonoidSpec &vjpSpec = backward.vjpSpec;
  auto isLive = [&](unsigned c) {
    return llvm::is_contained(carried, c) && backward.differentiable[c];
  };

  // Outputs: one gradient per input and per init tensor, written per
  // (batch entry, head).
  llvm::SmallVector<Value> inits;
  for (Value input : llvm::concat<Value>(op.getInputs(), op.getInit())) {
    auto type = cast<RankedTensorType>(input.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  auto loop = scf::ForallOp::create(
      b, loc, llvm::ArrayRef<OpFoldResult>{idx(b, batch), idx(b, heads)}, inits,
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  // Masks are made on first use, from inside the loops; they go before the
  // loops, right after this constant.
  OpBuilder hoist(ctx);
  hoist.setInsertionPointAfter(c0.getDefiningOp());
  decay = std::make_unique<DecayTiles>(hoist, loc, chunk, forward.gamma);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value cC = arith::ConstantIndexOp::create(b, loc, chunk);
  Value cT = arith::ConstantIndexOp::create(b, loc, length);
  Value cN = arith::ConstantIndexOp::create(b, loc, numChunks);
  auto bounds = [&](OpBuilder &nb, Value c) {
    Value start = arith::MulIOp::create(nb, loc, c, cC);
    Value rest = arith::SubIOp::create(nb, loc, cT, start);
    Value rows = arith::MinSIOp::create(nb, loc, rest, cC);
    return std::make_pair(start, rows);
  };
  auto componentType = [&](unsigned c) {
    return RankedTensorType::get(componentShapes[c], f32);
  };
  auto perChunkType = [&](unsigned c) {
    llvm::SmallVector<int64_t> shape = {numChunks};
    llvm::append_range(shape, componentShapes[c]);
    return RankedTensorType::get(shape, f32);
  };
  auto chunkSlice = [&](OpBuilder &nb, unsigned c, Value at) {
    llvm::SmallVector<OpFoldResult> offsets = {at}, sizes = {idx(nb, 1)};
    for (int64_t s : componentShapes[c]) {
      offsets.push_back(idx(nb, 0));
      sizes.push_back(idx(nb, s));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(nb, 1));
    return std::make_tuple(offsets, sizes, strides);
  };
  llvm::SmallVector<Type> fullTypes;
  for (unsigned c = 0; c < n; ++c)
    fullTypes.push_back(componentType(c));
  // The [B, H, component] state tensor `state`'s (batch entry, head) slice.
  auto statePlace = [&](OpBuilder &nb, unsigned c) {
    llvm::SmallVector<OpFoldResult> offsets = {bi, hi},
                                    sizes = {idx(nb, 1), idx(nb, 1)};
    for (int64_t s : componentShapes[c]) {
      offsets.push_back(idx(nb, 0));
      sizes.push_back(idx(nb, s));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(nb, 1));
    return std::make_tuple(offsets, sizes, strides);
  };
  auto stateAt = [&](OpBuilder &nb, Value state, unsigned c) -> Value {
    auto [offsets, sizes, strides] = statePlace(nb, c);
    return tensor::ExtractSliceOp::create(nb, loc, componentType(c), state,
                                          offsets, sizes, strides);
  };

  // 1. The state carried into every chunk, kept in one [N, ...] tensor per
  // carried component and read back from it (a loop-carried state would
  // leave an unused buffer per loop, which the deallocation can only free
  // through a run-time alias check).
  size_t k = carried.size();
  llvm::SmallVector<Value> forwardInits;
  for (auto [i, c] : llvm::enumerate(carried)) {
    Value all =
        tensor::EmptyOp::create(b, loc, perChunkType(c).getShape(), f32);
    Value first = op.getInit().empty()
                      ? buildMonoidIdentity(b, loc, spec, c, componentType(c))
                      : stateAt(b, op.getInit()[i], c);
    auto [offsets, sizes, strides] = chunkSlice(b, c, c0);
    forwardInits.push_back(tensor::InsertSliceOp::create(
        b, loc, first, all, offsets, sizes, strides));
  }
  LogicalResult status = success();
  Value lastChunk = arith::SubIOp::create(b, loc, cN, c1);
  auto forwardLoop = scf::ForOp::create(
      b, loc, c0, lastChunk, c1, forwardInits,
      [&](OpBuilder &nb, Location l, Value c, ValueRange iter) {
        auto [start, rows] = bounds(nb, c);
        llvm::SmallVector<Value> state;
        for (size_t i = 0; i < k; ++i) {
          auto [offsets, sizes, strides] = chunkSlice(nb, carried[i], c);
          state.push_back(
              tensor::ExtractSliceOp::create(nb, l, componentType(carried[i]),
                                             iter[i], offsets, sizes, strides));
        }
        ChunkTiles tiles;
        tiles.chunk = chunk;
        tiles.length = rows;
        for (Value input : op.getInputs())
          tiles.tokens.push_back(loadRows(nb, l, input, bi, hi, start, rows));
        FailureOr<llvm::SmallVector<Value>> summary =
            emitSummaries(nb, l, tiles);
        if (failed(summary)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        llvm::SmallVector<Value> next =
            combineCarried(nb, l, op.getMonoid(), state, *summary, fullTypes);
        Value following = arith::AddIOp::create(nb, l, c, c1);
        llvm::SmallVector<Value> results;
        for (size_t i = 0; i < k; ++i) {
          auto [offsets, sizes, strides] =
              chunkSlice(nb, carried[i], following);
          results.push_back(tensor::InsertSliceOp::create(
              nb, l, next[i], iter[i], offsets, sizes, strides));
        }
        scf::YieldOp::create(nb, l, results);
      });
  if (failed(status))
    return failure();
  ValueRange entryStates = forwardLoop.getResults();

  // 2. From the last chunk to the first.
  llvm::SmallVector<unsigned> live;
  for (unsigned c = 0; c < n; ++c)
    if (isLive(c))
      live.push_back(c);
  // λ after the last chunk: the final state's cotangent, or zero.
  llvm::SmallVector<Value> backwardInits;
  for (unsigned c : live) {
    auto pos = llvm::find(carried, c) - carried.begin();
    backwardInits.push_back(
        op.getFinalCotangent().empty()
            ? TileBuilder(b, loc).zeros(componentShapes[c])
            : linalg::CopyOp::create(
                  b, loc, stateAt(b, op.getFinalCotangent()[pos], c),
                  TileBuilder(b, loc).zeros(componentShapes[c]))
                  .getResult(0));
  }
  llvm::ArrayRef<BlockArgument> outs = loop.getRegionIterArgs();
  llvm::SmallVector<RankedTensorType> rowTypes;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    llvm::SmallVector<OpFoldResult> offsets = {bi, c0, hi},
                                    sizes = {idx(b, 1), idx(b, length),
                                             idx(b, 1)};
    llvm::SmallVector<int64_t> rowShape = {length};
    if (type.getRank() == 4) {
      offsets.push_back(c0);
      sizes.push_back(idx(b, type.getDimSize(3)));
      rowShape.push_back(type.getDimSize(3));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    auto rowType = RankedTensorType::get(rowShape, type.getElementType());
    rowTypes.push_back(rowType);
    backwardInits.push_back(tensor::ExtractSliceOp::create(
        b, loc, rowType, outs[i], offsets, sizes, strides));
  }
  size_t nl = live.size();
  auto backwardLoop = scf::ForOp::create(
      b, loc, c0, cN, c1, backwardInits,
      [&](OpBuilder &nb, Location l, Value i, ValueRange iter) {
        auto bail = [&] {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
        };
        TileBuilder tb(nb, l);
        Value last = arith::SubIOp::create(nb, l, cN, c1);
        Value c = arith::SubIOp::create(nb, l, last, i);
        auto [start, rows] = bounds(nb, c);
        ChunkTiles tiles;
        tiles.chunk = chunk;
        tiles.length = rows;
        for (Value input : op.getInputs())
          tiles.tokens.push_back(loadRows(nb, l, input, bi, hi, start, rows));
        tiles.carried.assign(n, Value());
        for (auto [j, cc] : llvm::enumerate(carried)) {
          auto [offsets, sizes, strides] = chunkSlice(nb, cc, c);
          tiles.carried[cc] = tensor::ExtractSliceOp::create(
              nb, l, componentType(cc), entryStates[j], offsets, sizes,
              strides);
        }
        FailureOr<llvm::SmallVector<Value>> summary =
            emitSummaries(nb, l, tiles);
        if (failed(summary))
          return bail();

        // The readouts' cotangents: g itself, or through num / (den + ε).
        Value g = loadRows(nb, l, op.getCotangent(), bi, hi, start, rows);
        llvm::SmallVector<Value> cotangents(spec.readouts.size());
        if (!den) {
          cotangents[numIndex] = g;
        } else {
          int64_t width = tb.shapeOf(g)[1];
          FailureOr<Value> num =
              emitSum(tb, spec, tiles, forward.readouts[numIndex].terms, false,
                      {chunk, width});
          FailureOr<Value> denom =
              emitSum(tb, spec, tiles, forward.readouts[denIndex].terms, false,
                      {chunk});
          if (failed(num) || failed(denom))
            return bail();
          double eps = op.getEps().convertToDouble();
          Value inv = tb.generic(
              {*denom}, tb.empty({chunk}),
              {nb.getMultiDimIdentityMap(1), nb.getMultiDimIdentityMap(1)},
              {utils::IteratorType::parallel},
              [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
                Value e =
                    arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(eps));
                Value one =
                    arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(1));
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
            auxTypes.push_back(fullTypes[cc]);
            Value a;
            if (part == 0)
              a = tiles.carried[cc];
            else if (part == 1 && isLive(cc))
              a = iter[llvm::find(live, cc) - live.begin()];
            lhs.push_back(a ? a
                            : Value(tensor::EmptyOp::create(
                                  nb, l, componentShapes[cc], f32)));
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
            vtiles.carried[n + cc] = iter[llvm::find(live, cc) - live.begin()];
          if (!backward.summaryCotangent[cc].empty())
            vtiles.carried[2 * n + cc] = transposed.getResult(2 * n + cc);
        }

        llvm::SmallVector<Value> next;
        for (auto [j, cc] : llvm::enumerate(live)) {
          Value grad = backward.carriedFromCombine[cc].empty()
                           ? tb.zeros(componentShapes[cc])
                           : transposed.getResult(n + cc);
          for (const PlannedOutput &out : backward.carriedFromReadouts) {
            if (out.index != cc || out.terms.empty())
              continue;
            FailureOr<Value> fromReadouts = emitSum(
                tb, vjpSpec, vtiles, out.terms, true, componentShapes[cc]);
            if (failed(fromReadouts))
              return bail();
            grad = tb.add(grad, *fromReadouts);
          }
          next.push_back(grad);
        }
        for (auto [s, out] : llvm::enumerate(backward.inputGradients)) {
          auto rowType = rowTypes[s];
          llvm::SmallVector<int64_t> tileShape = {chunk};
          if (rowType.getRank() == 2)
            tileShape.push_back(rowType.getDimSize(1));
          llvm::SmallVector<IndexTerm> terms;
          for (const IndexTerm &t : out.terms)
            terms.push_back(asRows(vjpSpec, t));
          FailureOr<Value> grad =
              emitSum(tb, vjpSpec, vtiles, terms, false, tileShape);
          if (failed(grad))
            return bail();
          Value cast = tb.castTo(*grad, rowType.getElementType());
          llvm::SmallVector<OpFoldResult> zeros(tileShape.size(), idx(nb, 0));
          llvm::SmallVector<OpFoldResult> sizes = {rows};
          llvm::SmallVector<int64_t> validShape = {ShapedType::kDynamic};
          if (tileShape.size() == 2) {
            sizes.push_back(idx(nb, tileShape[1]));
            validShape.push_back(tileShape[1]);
          }
          llvm::SmallVector<OpFoldResult> ones(tileShape.size(), idx(nb, 1));
          Value valid = tensor::ExtractSliceOp::create(
              nb, l,
              RankedTensorType::get(validShape, rowType.getElementType()), cast,
              zeros, sizes, ones);
          llvm::SmallVector<OpFoldResult> at = {start};
          if (tileShape.size() == 2)
            at.push_back(idx(nb, 0));
          next.push_back(tensor::InsertSliceOp::create(
              nb, l, valid, iter[nl + s], at, sizes, ones));
        }
        // ∂X₀ is written over the carried λ after λ's last read, so that
        // the loop keeps one buffer (a fresh one per iteration would need a
        // run-time alias check to be freed after the loop).
        for (size_t j = 0; j < nl; ++j)
          next[j] =
              linalg::CopyOp::create(nb, l, next[j], iter[j]).getResult(0);
        scf::YieldOp::create(nb, l, next);
      });
  if (failed(status))
    return failure();

  b.setInsertionPointToStart(loop.getTerminator().getBody());
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    llvm::SmallVector<OpFoldResult> offsets = {bi, c0, hi},
                                    sizes = {idx(b, 1), idx(b, length),
                                             idx(b, 1)};
    if (type.getRank() == 4) {
      offsets.push_back(c0);
      sizes.push_back(idx(b, type.getDimSize(3)));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    tensor::ParallelInsertSliceOp::create(b, loc,
                                          backwardLoop.getResult(nl + i),
                                          outs[i], offsets, sizes, strides);
  }
  // The initial state's gradient: λ carried out of the first chunk (every
  // carried component is live here, checked above).
  size_t numInputs = op.getInputs().size();
  for (auto [i, c] : llvm::enumerate(carried)) {
    if (op.getInit().empty())
      break;
    auto [offsets, sizes, strides] = statePlace(b, c);
    Value grad = backwardLoop.getResult(llvm::find(live, c) - live.begin());
    tensor::ParallelInsertSliceOp::create(b, loc, grad, outs[numInputs + i],
                                          offsets, sizes, strides);
  }
  op->replaceAllUsesWith(loop.getResults());
  op->erase();
  return success();
}

} // namespace

LogicalResult mlir::hla::chunk::lowerPrefixVjp(PrefixVjpOp op, int64_t chunk) {
  const MonoidSpec &spec = op.getMonoid().getSpec();
  std::string error;
  FailureOr<ChunkPlan> forward = buildChunkPlan(spec, error);
  if (failed(forward))
    return chunkError(op) << error;
  FailureOr<ChunkVjpPlan> backward = buildChunkVjpPlan(spec, error);
  if (failed(backward))
    return chunkError(op) << error;
  return PrefixVjpLowering(op, chunk, *forward, *backward).lower();
}
