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

/// The monoid whose combine is μ_A and μ_B (ChunkVjp.h): components are the
/// state's, then λ, then μ_B; rule n + y is μ_A of y, rule 2n + y is μ_B of
/// y. λ, read as side None by the plan, is read from side A here.
static MonoidSpec transposedCombineMonoid(const ChunkVjpPlan &plan) {
  MonoidSpec aux = plan.vjpSpec;
  aux.name = plan.vjpSpec.name + "_transposed_combine";
  aux.inputs.clear();
  aux.readouts.clear();
  unsigned n = plan.numComponents;
  for (unsigned c = 0; c < 3 * n; ++c) {
    aux.token[c].clear();
    aux.combine[c].clear();
    aux.components[c].eyeIdentity = false;
  }
  auto sided = [](MonoidExpr expr) {
    for (MonoidTerm &t : expr)
      for (MonoidFactor &f : t.factors)
        if (f.kind == MonoidFactor::Kind::Component &&
            f.side == MonoidSide::None)
          f.side = MonoidSide::A;
    return expr;
  };
  for (unsigned y = 0; y < n; ++y) {
    aux.combine[n + y] = sided(plan.carriedFromCombine[y]);
    aux.combine[2 * n + y] = sided(plan.summaryCotangent[y]);
  }
  return aux;
}

class PrefixVjpLowering {
public:
  PrefixVjpLowering(PrefixVjpOp op, int64_t chunk, const ChunkPlan &forward,
                    const ChunkVjpPlan &backward)
      : op(op), spec(op.getMonoid().getSpec()), chunk(chunk), forward(forward),
        backward(backward), context(op.getContext()) {}

  LogicalResult lower();

private:
  /// What one chunk's backward reads: its tiles (tokens, X₀), its summary
  /// and the readouts' cotangents (through num / (den + ε)).
  struct Chunk {
    ChunkTiles tiles;
    Value start, rows;
    llvm::SmallVector<Value> summary, cotangents;
  };
  LogicalResult prepare();
  /// The [Lead..., component c] slice type and the offsets of [lead...].
  RankedTensorType componentType(unsigned c) const;
  RankedTensorType stackedType(llvm::ArrayRef<int64_t> lead, unsigned c) const;
  Value extractComponent(OpBuilder &b, Location loc, Value stacked, unsigned c,
                         llvm::ArrayRef<OpFoldResult> lead);
  Value insertComponent(OpBuilder &b, Location loc, Value value, Value stacked,
                        unsigned c, llvm::ArrayRef<OpFoldResult> lead);
  /// The chunk's rows [start, start + length) of a [B, T, H, ...] operand,
  /// zero-padded to `chunk` rows, f32.
  Value loadRows(OpBuilder &b, Location loc, Value operand, Value batch,
                 Value head, Value start, Value length);
  /// Chunk `c` of (batch entry, head) with X₀ = `entry` (per carried
  /// component).
  FailureOr<Chunk> loadChunk(OpBuilder &b, Location loc, Value batchIndex,
                             Value head, Value c, llvm::ArrayRef<Value> entry);
  /// μ_A and μ_B of the chunk for λ (per live component).
  CombineOp transposedCombine(OpBuilder &b, Location loc, const Chunk &chunk,
                              llvm::ArrayRef<Value> lambda);
  /// The tiles backward terms read: the chunk's, the cotangents as inputs,
  /// λ and μ_B as components.
  ChunkTiles backwardTiles(const Chunk &chunk, llvm::ArrayRef<Value> lambda,
                           CombineOp transposed);
  /// Sums `terms` (rows [c, width] or a component).
  FailureOr<Value> emitSum(TileBuilder &tb, const MonoidSpec &termSpec,
                           const ChunkTiles &tiles,
                           llvm::ArrayRef<IndexTerm> terms, bool isSummary,
                           llvm::ArrayRef<int64_t> shape) {
    return emitTermSum(tb, termSpec, tiles, *decay, op, terms, isSummary,
                       shape);
  }
  /// Pass 1, per (batch entry, head): the states carried into the chunks
  /// and the cotangents λ of the states carried out of them.
  FailureOr<scf::ForallOp> emitStatePasses(OpBuilder &b, Location loc);
  /// Pass 2, per (batch entry, head, chunk): the tokens' gradients.
  FailureOr<scf::ForallOp> emitGradients(OpBuilder &b, Location loc,
                                         ValueRange entries,
                                         ValueRange lambdas);
  /// Masks made on first use go right after `anchor`, before the loops.
  void startMasks(Operation *anchor);

  PrefixVjpOp op;
  const MonoidSpec &spec;
  int64_t chunk;
  const ChunkPlan &forward;
  const ChunkVjpPlan &backward;
  MLIRContext *context;
  std::unique_ptr<OpBuilder> hoist;
  std::unique_ptr<DecayTiles> decay;
  llvm::SmallVector<llvm::SmallVector<int64_t>> componentShapes;
  llvm::SmallVector<Type> fullTypes;
  llvm::SmallVector<unsigned> carried, live;
  MonoidAttr auxMonoid;
  int64_t batch = 0, length = 0, heads = 0, numChunks = 0;
  unsigned numIndex = 0, denIndex = 0;
  bool hasDen = false;
};

RankedTensorType PrefixVjpLowering::componentType(unsigned c) const {
  return RankedTensorType::get(componentShapes[c], Float32Type::get(context));
}

RankedTensorType PrefixVjpLowering::stackedType(llvm::ArrayRef<int64_t> lead,
                                                unsigned c) const {
  llvm::SmallVector<int64_t> shape(lead);
  llvm::append_range(shape, componentShapes[c]);
  return RankedTensorType::get(shape, Float32Type::get(context));
}

Value PrefixVjpLowering::extractComponent(OpBuilder &b, Location loc,
                                          Value stacked, unsigned c,
                                          llvm::ArrayRef<OpFoldResult> lead) {
  llvm::SmallVector<OpFoldResult> offsets(lead), sizes(lead.size(), idx(b, 1));
  for (int64_t size : componentShapes[c]) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, size));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return tensor::ExtractSliceOp::create(b, loc, componentType(c), stacked,
                                        offsets, sizes, strides);
}

Value PrefixVjpLowering::insertComponent(OpBuilder &b, Location loc,
                                         Value value, Value stacked, unsigned c,
                                         llvm::ArrayRef<OpFoldResult> lead) {
  llvm::SmallVector<OpFoldResult> offsets(lead), sizes(lead.size(), idx(b, 1));
  for (int64_t size : componentShapes[c]) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, size));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return tensor::InsertSliceOp::create(b, loc, value, stacked, offsets, sizes,
                                       strides);
}

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

void PrefixVjpLowering::startMasks(Operation *anchor) {
  hoist = std::make_unique<OpBuilder>(op.getContext());
  hoist->setInsertionPointAfter(anchor);
  decay =
      std::make_unique<DecayTiles>(*hoist, op.getLoc(), chunk, forward.gamma);
}

LogicalResult PrefixVjpLowering::prepare() {
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
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    fullTypes.push_back(componentType(c));
    if (llvm::is_contained(carried, c) && backward.differentiable[c])
      live.push_back(c);
  }
  for (auto [i, r] : llvm::enumerate(spec.readouts)) {
    if (r.name == "num") {
      numIndex = i;
    } else if (r.name == "den") {
      denIndex = i;
      hasDen = true;
    } else {
      return chunkError(op)
             << "readout '" << r.name << "' is neither num nor den";
    }
  }
  auxMonoid =
      MonoidAttr::get(op.getContext(), transposedCombineMonoid(backward));
  return success();
}

FailureOr<PrefixVjpLowering::Chunk>
PrefixVjpLowering::loadChunk(OpBuilder &b, Location loc, Value batchIndex,
                             Value head, Value c, llvm::ArrayRef<Value> entry) {
  TileBuilder tb(b, loc);
  Chunk result;
  Value cC = arith::ConstantIndexOp::create(b, loc, chunk);
  Value cT = arith::ConstantIndexOp::create(b, loc, length);
  result.start = arith::MulIOp::create(b, loc, c, cC);
  Value rest = arith::SubIOp::create(b, loc, cT, result.start);
  result.rows = arith::MinSIOp::create(b, loc, rest, cC);
  ChunkTiles &tiles = result.tiles;
  tiles.chunk = chunk;
  tiles.length = result.rows;
  for (Value input : op.getInputs())
    tiles.tokens.push_back(
        loadRows(b, loc, input, batchIndex, head, result.start, result.rows));
  tiles.carried.assign(spec.components.size(), Value());
  for (auto [j, cc] : llvm::enumerate(carried))
    tiles.carried[cc] = entry[j];
  FailureOr<llvm::SmallVector<Value>> summary = emitChunkSummaries(
      b, loc, spec, forward, tiles, *decay, op, componentShapes);
  if (failed(summary))
    return failure();
  result.summary = std::move(*summary);

  // The readouts' cotangents: g itself, or through num / (den + ε).
  Value g = loadRows(b, loc, op.getCotangent(), batchIndex, head, result.start,
                     result.rows);
  result.cotangents.resize(spec.readouts.size());
  if (!hasDen) {
    result.cotangents[numIndex] = g;
    return result;
  }
  int64_t width = tb.shapeOf(g)[1];
  FailureOr<Value> num = emitSum(
      tb, spec, tiles, forward.readouts[numIndex].terms, false, {chunk, width});
  FailureOr<Value> den = emitSum(
      tb, spec, tiles, forward.readouts[denIndex].terms, false, {chunk});
  if (failed(num) || failed(den))
    return failure();
  double eps = op.getEps().convertToDouble();
  Value inv = tb.generic(
      {*den}, tb.empty({chunk}),
      {b.getMultiDimIdentityMap(1), b.getMultiDimIdentityMap(1)},
      {utils::IteratorType::parallel},
      [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
        Value e = arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(eps));
        Value one = arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(1));
        Value sum = arith::AddFOp::create(eb, el, args[0], e);
        return arith::DivFOp::create(eb, el, one, sum);
      });
  // d_num = g / (den + ε); d_den = −(g · num) / (den + ε)².
  result.cotangents[numIndex] = tb.scaleRows(g, inv);
  Value gn = tb.mul(tb.dotRows(g, *num), tb.mul(inv, inv));
  result.cotangents[denIndex] = tb.scale(gn, -1.0);
  return result;
}

CombineOp PrefixVjpLowering::transposedCombine(OpBuilder &b, Location loc,
                                               const Chunk &chunk,
                                               llvm::ArrayRef<Value> lambda) {
  unsigned n = spec.components.size();
  Type f32 = b.getF32Type();
  llvm::SmallVector<Value> lhs, rhs;
  llvm::SmallVector<Type> types;
  auto empty = [&](unsigned cc) -> Value {
    return tensor::EmptyOp::create(b, loc, componentShapes[cc], f32);
  };
  for (unsigned part = 0; part < 3; ++part)
    for (unsigned cc = 0; cc < n; ++cc) {
      types.push_back(fullTypes[cc]);
      Value a;
      if (part == 0)
        a = chunk.tiles.carried[cc];
      else if (part == 1 && llvm::is_contained(live, cc))
        a = lambda[llvm::find(live, cc) - live.begin()];
      lhs.push_back(a ? a : empty(cc));
      rhs.push_back(part == 0 ? chunk.summary[cc] : empty(cc));
    }
  return CombineOp::create(b, loc, TypeRange(types), auxMonoid, lhs, rhs);
}

ChunkTiles PrefixVjpLowering::backwardTiles(const Chunk &chunk,
                                            llvm::ArrayRef<Value> lambda,
                                            CombineOp transposed) {
  unsigned n = spec.components.size();
  ChunkTiles tiles = chunk.tiles;
  llvm::append_range(tiles.tokens, chunk.cotangents);
  tiles.carried.resize(3 * n);
  for (auto [j, cc] : llvm::enumerate(live))
    tiles.carried[n + cc] = lambda[j];
  for (unsigned cc = 0; cc < n; ++cc)
    if (!backward.summaryCotangent[cc].empty())
      tiles.carried[2 * n + cc] = transposed.getResult(2 * n + cc);
  return tiles;
}

FailureOr<scf::ForallOp> PrefixVjpLowering::emitStatePasses(OpBuilder &b,
                                                            Location loc) {
  Type f32 = b.getF32Type();
  size_t k = carried.size(), nl = live.size();
  llvm::SmallVector<int64_t> lead = {batch, heads, numChunks};
  llvm::SmallVector<Value> inits;
  for (unsigned c : carried)
    inits.push_back(
        tensor::EmptyOp::create(b, loc, stackedType(lead, c).getShape(), f32));
  for (unsigned c : live)
    inits.push_back(
        tensor::EmptyOp::create(b, loc, stackedType(lead, c).getShape(), f32));
  auto loop = scf::ForallOp::create(
      b, loc, llvm::ArrayRef<OpFoldResult>{idx(b, batch), idx(b, heads)}, inits,
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  startMasks(c0.getDefiningOp());
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value cN = arith::ConstantIndexOp::create(b, loc, numChunks);
  Value last = arith::SubIOp::create(b, loc, cN, c1);
  llvm::SmallVector<int64_t> perChunk = {numChunks};
  LogicalResult status = success();

  // The state carried into every chunk, kept in one [N, ...] tensor per
  // carried component and read back from it (a loop-carried state would
  // leave an unused buffer, which the deallocation can only free through a
  // run-time alias check).
  llvm::SmallVector<Value> forwardInits;
  for (unsigned c : carried) {
    Value all = tensor::EmptyOp::create(
        b, loc, stackedType(perChunk, c).getShape(), f32);
    Value identity = buildMonoidIdentity(b, loc, spec, c, componentType(c));
    forwardInits.push_back(insertComponent(b, loc, identity, all, c, {c0}));
  }
  auto forwardLoop = scf::ForOp::create(
      b, loc, c0, last, c1, forwardInits,
      [&](OpBuilder &nb, Location l, Value c, ValueRange iter) {
        llvm::SmallVector<Value> state;
        for (size_t i = 0; i < k; ++i)
          state.push_back(extractComponent(nb, l, iter[i], carried[i], {c}));
        TileBuilder tb(nb, l);
        Value cC = arith::ConstantIndexOp::create(nb, l, chunk);
        Value start = arith::MulIOp::create(nb, l, c, cC);
        Value rows = arith::MinSIOp::create(
            nb, l,
            arith::SubIOp::create(
                nb, l, arith::ConstantIndexOp::create(nb, l, length), start),
            cC);
        ChunkTiles tiles;
        tiles.chunk = chunk;
        tiles.length = rows;
        for (Value input : op.getInputs())
          tiles.tokens.push_back(loadRows(nb, l, input, bi, hi, start, rows));
        FailureOr<llvm::SmallVector<Value>> summary = emitChunkSummaries(
            nb, l, spec, forward, tiles, *decay, op, componentShapes);
        if (failed(summary)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        llvm::SmallVector<Value> next =
            combineCarried(nb, l, op.getMonoid(), state, *summary, fullTypes);
        Value following = arith::AddIOp::create(nb, l, c, c1);
        llvm::SmallVector<Value> results;
        for (size_t i = 0; i < k; ++i)
          results.push_back(insertComponent(nb, l, next[i], iter[i], carried[i],
                                            {following}));
        scf::YieldOp::create(nb, l, results);
      });
  if (failed(status))
    return failure();

  // From the last chunk to the first: λ of each chunk's carried-out state
  // (zero after the last), saved per chunk; ∂X₀ of chunk c is λ of c − 1.
  llvm::SmallVector<Value> backwardInits;
  for (unsigned c : live)
    backwardInits.push_back(TileBuilder(b, loc).zeros(componentShapes[c]));
  for (unsigned c : live)
    backwardInits.push_back(tensor::EmptyOp::create(
        b, loc, stackedType(perChunk, c).getShape(), f32));
  auto backwardLoop = scf::ForOp::create(
      b, loc, c0, cN, c1, backwardInits,
      [&](OpBuilder &nb, Location l, Value i, ValueRange iter) {
        auto bail = [&] {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
        };
        TileBuilder tb(nb, l);
        Value c = arith::SubIOp::create(nb, l, last, i);
        llvm::SmallVector<Value> entry;
        for (size_t j = 0; j < k; ++j)
          entry.push_back(extractComponent(nb, l, forwardLoop.getResult(j),
                                           carried[j], {c}));
        FailureOr<Chunk> current = loadChunk(nb, l, bi, hi, c, entry);
        if (failed(current))
          return bail();
        llvm::SmallVector<Value> lambda(iter.take_front(nl));
        CombineOp transposed = transposedCombine(nb, l, *current, lambda);
        ChunkTiles tiles = backwardTiles(*current, lambda, transposed);
        llvm::SmallVector<Value> next;
        for (auto [j, cc] : llvm::enumerate(live)) {
          Value grad = backward.carriedFromCombine[cc].empty()
                           ? tb.zeros(componentShapes[cc])
                           : transposed.getResult(spec.components.size() + cc);
          for (const PlannedOutput &out : backward.carriedFromReadouts) {
            if (out.index != cc || out.terms.empty())
              continue;
            FailureOr<Value> fromReadouts =
                emitSum(tb, backward.vjpSpec, tiles, out.terms, true,
                        componentShapes[cc]);
            if (failed(fromReadouts))
              return bail();
            grad = tb.add(grad, *fromReadouts);
          }
          next.push_back(grad);
        }
        for (auto [j, cc] : llvm::enumerate(live))
          next.push_back(
              insertComponent(nb, l, lambda[j], iter[nl + j], cc, {c}));
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
  llvm::ArrayRef<BlockArgument> outs = loop.getRegionIterArgs();
  auto publish = [&](Value perChunkValue, Value into, unsigned c) {
    llvm::SmallVector<OpFoldResult> offsets = {bi, hi, c0};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), idx(b, 1),
                                             idx(b, numChunks)};
    for (int64_t size : componentShapes[c]) {
      offsets.push_back(c0);
      sizes.push_back(idx(b, size));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    tensor::ParallelInsertSliceOp::create(b, loc, perChunkValue, into, offsets,
                                          sizes, strides);
  };
  for (size_t j = 0; j < k; ++j)
    publish(forwardLoop.getResult(j), outs[j], carried[j]);
  for (size_t j = 0; j < nl; ++j)
    publish(backwardLoop.getResult(nl + j), outs[k + j], live[j]);
  return loop;
}

FailureOr<scf::ForallOp> PrefixVjpLowering::emitGradients(OpBuilder &b,
                                                          Location loc,
                                                          ValueRange entries,
                                                          ValueRange lambdas) {
  llvm::SmallVector<Value> inits;
  for (Value input : op.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  auto loop = scf::ForallOp::create(
      b, loc,
      llvm::ArrayRef<OpFoldResult>{idx(b, batch), idx(b, heads),
                                   idx(b, numChunks)},
      inits, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1),
        c = body->getArgument(2);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  startMasks(c0.getDefiningOp());
  TileBuilder tb(b, loc);
  llvm::SmallVector<Value> entry, lambda;
  for (auto [j, cc] : llvm::enumerate(carried))
    entry.push_back(extractComponent(b, loc, entries[j], cc, {bi, hi, c}));
  for (auto [j, cc] : llvm::enumerate(live))
    lambda.push_back(extractComponent(b, loc, lambdas[j], cc, {bi, hi, c}));
  FailureOr<Chunk> current = loadChunk(b, loc, bi, hi, c, entry);
  if (failed(current))
    return failure();
  CombineOp transposed = transposedCombine(b, loc, *current, lambda);
  ChunkTiles tiles = backwardTiles(*current, lambda, transposed);
  llvm::SmallVector<Value> rows;
  for (const PlannedOutput &out : backward.inputGradients) {
    auto type = cast<RankedTensorType>(op.getInputs()[out.index].getType());
    llvm::SmallVector<int64_t> tileShape = {chunk};
    if (type.getRank() == 4)
      tileShape.push_back(type.getDimSize(3));
    llvm::SmallVector<IndexTerm> terms;
    for (const IndexTerm &t : out.terms)
      terms.push_back(asRows(backward.vjpSpec, t));
    FailureOr<Value> grad =
        emitSum(tb, backward.vjpSpec, tiles, terms, false, tileShape);
    if (failed(grad))
      return failure();
    rows.push_back(tb.castTo(*grad, type.getElementType()));
  }
  b.setInsertionPointToStart(loop.getTerminator().getBody());
  for (auto [i, out] : llvm::enumerate(loop.getRegionIterArgs())) {
    auto type = cast<RankedTensorType>(out.getType());
    llvm::SmallVector<OpFoldResult> offsets = {bi, current->start, hi};
    llvm::SmallVector<OpFoldResult> sizes = {idx(b, 1), current->rows,
                                             idx(b, 1)};
    llvm::SmallVector<OpFoldResult> tileOffsets = {c0},
                                    tileSizes = {current->rows};
    llvm::SmallVector<int64_t> validShape = {ShapedType::kDynamic};
    if (type.getRank() == 4) {
      offsets.push_back(c0);
      sizes.push_back(idx(b, type.getDimSize(3)));
      tileOffsets.push_back(c0);
      tileSizes.push_back(idx(b, type.getDimSize(3)));
      validShape.push_back(type.getDimSize(3));
    }
    // The chunk's valid rows only (the last chunk may be short).
    b.setInsertionPoint(loop.getTerminator());
    llvm::SmallVector<OpFoldResult> tileStrides(tileOffsets.size(), idx(b, 1));
    Value valid = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(validShape, type.getElementType()),
        rows[i], tileOffsets, tileSizes, tileStrides);
    b.setInsertionPointToEnd(loop.getTerminator().getBody());
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    tensor::ParallelInsertSliceOp::create(b, loc, valid, out, offsets, sizes,
                                          strides);
  }
  return loop;
}

LogicalResult PrefixVjpLowering::lower() {
  if (failed(prepare()))
    return failure();
  Location loc = op.getLoc();
  OpBuilder b(op);
  FailureOr<scf::ForallOp> states = emitStatePasses(b, loc);
  if (failed(states))
    return failure();
  size_t k = carried.size();
  FailureOr<scf::ForallOp> gradients =
      emitGradients(b, loc, states->getResults().take_front(k),
                    states->getResults().drop_front(k));
  if (failed(gradients))
    return failure();
  op->replaceAllUsesWith(gradients->getResults());
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
