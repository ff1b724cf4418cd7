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
// Runs: where few (batch entry, head) pairs leave a GPU idle and value
// tiles do not apply, passes 1 and 2 cut each sequence into R runs of
// whole chunks, run in parallel:
//
//   1a. each run's total: its chunks' summaries folded from the identity;
//   1b. each run folds the totals of the runs before it into the initial
//       state and saves the states entering its own chunks;
//   2a. each run's reverse pass from λ = 0, giving β_r, the λ it hands on;
//   2b. each run finds the λ leaving it from the runs after it and runs its
//       reverse pass from there.
//
// 2b rests on λ's step being affine: λ_{c-1} = T_c(λ_c) + b_c, with T_c
// the transposed combine with chunk c's summary at the state entering it
// and b_c from the chunk's readouts (independent of λ). Through a run
// [a, e) the map is T(λ) + β with T the transposed combine with the run's
// total at the state entering chunk a (the combines compose by
// associativity: (X ⊕ Σ_a) ⊕ Σ_{a+1} = X ⊕ (Σ_a ⊕ Σ_{a+1})), so the λ
// leaving run r is found by folding, from the last run back to r + 1,
// λ ← T_{total_s, X_{a_s}}(λ) + β_s. About 1.5 to 2 times the work of the
// plain passes, with R times their parallelism.
//
// The transposed combine rule (μ_A and μ_B) is an hla.combine under an
// auxiliary monoid whose components are the state, λ and μ_B, so it is
// lowered like every other combine.
//
//===----------------------------------------------------------------------===//

#include "ChunkBackward.h"

#include "hla/Conversion/HLAToLinalg.h"
#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

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

FailureOr<llvm::SmallVector<Value>>
PrefixVjpLowering::saveEntryStates(OpBuilder &b, ValueRange runTotals) {
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  llvm::SmallVector<Value> stacks;
  for (unsigned c : carried)
    stacks.push_back(
        tensor::EmptyOp::create(b, loc, stackType(c).getShape(), f32));
  OpBuilder::InsertionGuard guard(b);
  scf::ForallOp states = beginPass(b, stacks, true, true);
  Block *body = states.getBody();
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value lo, end;
  std::tie(lo, end) = runChunks(b, loc);

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
  if (runIndex) {
    // The state entering the run: the totals of the runs before it.
    auto before = scf::ForOp::create(
        b, loc, c0, runIndex, c1, loopInits,
        [&](OpBuilder &nb, Location l, Value previous, ValueRange carry) {
          llvm::SmallVector<Value> total;
          for (unsigned c = 0; c < spec.components.size(); ++c) {
            auto [offsets, sizes, strides] = runPlace(nb, bi, hi, previous, c);
            total.push_back(tensor::ExtractSliceOp::create(
                nb, l, componentType(c), runTotals[c], offsets, sizes,
                strides));
          }
          llvm::SmallVector<Value> next =
              combineCarried(nb, l, op.getMonoid(), carry, total, fullTypes);
          for (size_t i = 0; i < k; ++i)
            next[i] =
                linalg::CopyOp::create(nb, l, next[i], carry[i]).getResult(0);
          scf::YieldOp::create(nb, l, next);
        });
    loopInits.assign(before.getResults().begin(), before.getResults().end());
  }
  // (Written back in place: the slices' places, computed here, outside the
  // terminator, which holds only the writes.)
  llvm::SmallVector<tensor::ExtractSliceOp> slices;
  for (auto [i, c] : llvm::enumerate(carried)) {
    auto [offsets, sizes, strides] = stackRowsPlace(b, bi, hi, c);
    slices.push_back(tensor::ExtractSliceOp::create(
        b, loc, stackRowsType(c), states.getRegionIterArgs()[i], offsets, sizes,
        strides));
    loopInits.push_back(slices.back());
  }
  // The state is saved as the chunk starts; the last chunk's combine gives
  // the final state, which no gradient reads (one chunk's summary of N).
  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, lo, end, c1, loopInits,
      [&](OpBuilder &nb, Location l, Value c, ValueRange iter) {
        llvm::SmallVector<Value> saved;
        Value slot = runIndex ? Value(arith::SubIOp::create(nb, l, c, lo)) : c;
        for (auto [i, cc] : llvm::enumerate(carried)) {
          auto [offsets, sizes] = stackPlace(nb, l, cc, slot);
          llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(nb, 1));
          saved.push_back(tensor::InsertSliceOp::create(
              nb, l, iter[i], iter[k + i], offsets, sizes, strides));
        }
        Value start, rows;
        ChunkTiles tiles = loadChunk(nb, l, bi, hi, c, start, rows);
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
  for (auto [i, slice] : llvm::enumerate(slices))
    tensor::ParallelInsertSliceOp::create(
        b, loc, loop.getResult(k + i), states.getRegionIterArgs()[i],
        slice.getMixedOffsets(), slice.getMixedSizes(),
        slice.getMixedStrides());
  enterPass(b, loc, body, false, false);
  return llvm::SmallVector<Value>(states.getResults());
}

FailureOr<llvm::SmallVector<Value>>
PrefixVjpLowering::emitRunTotals(OpBuilder &b) {
  Location loc = op.getLoc();
  unsigned n = spec.components.size();
  llvm::SmallVector<Value> inits;
  for (unsigned c = 0; c < n; ++c)
    inits.push_back(tensor::EmptyOp::create(b, loc, perRunType(c).getShape(),
                                            b.getF32Type()));
  OpBuilder::InsertionGuard guard(b);
  scf::ForallOp totals = beginPass(b, inits, false, true);
  Block *body = totals.getBody();
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value lo, end;
  std::tie(lo, end) = runChunks(b, loc);
  // Every component: combining runs needs them all.
  llvm::SmallVector<Value> identity;
  llvm::SmallVector<Type> types;
  for (unsigned c = 0; c < n; ++c) {
    types.push_back(componentType(c));
    identity.push_back(buildMonoidIdentity(b, loc, spec, c, componentType(c)));
  }
  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, lo, end, c1, identity,
      [&](OpBuilder &nb, Location l, Value c, ValueRange total) {
        Value start, rows;
        ChunkTiles tiles = loadChunk(nb, l, bi, hi, c, start, rows);
        FailureOr<llvm::SmallVector<Value>> summary =
            emitSummaries(nb, l, tiles);
        if (failed(summary)) {
          status = failure();
          scf::YieldOp::create(nb, l, total);
          return;
        }
        auto combined = CombineOp::create(nb, l, TypeRange(types),
                                          op.getMonoid(), total, *summary);
        llvm::SmallVector<Value> next;
        for (unsigned c = 0; c < n; ++c)
          next.push_back(
              linalg::CopyOp::create(nb, l, combined.getResult(c), total[c])
                  .getResult(0));
        scf::YieldOp::create(nb, l, next);
      });
  if (failed(status))
    return failure();
  b.setInsertionPointToStart(totals.getTerminator().getBody());
  for (unsigned c = 0; c < n; ++c) {
    auto [offsets, sizes, strides] = runPlace(b, bi, hi, runIndex, c);
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(c),
                                          totals.getRegionIterArgs()[c],
                                          offsets, sizes, strides);
  }
  enterPass(b, loc, body, false, false);
  return llvm::SmallVector<Value>(totals.getResults());
}

FailureOr<llvm::SmallVector<Value>>
PrefixVjpLowering::emitRunLambdas(OpBuilder &b,
                                  llvm::ArrayRef<Value> entryStates) {
  Location loc = op.getLoc();
  llvm::SmallVector<Value> inits;
  for (unsigned c : live)
    inits.push_back(tensor::EmptyOp::create(b, loc, perRunType(c).getShape(),
                                            b.getF32Type()));
  OpBuilder::InsertionGuard guard(b);
  scf::ForallOp betas = beginPass(b, inits, false, true);
  Block *body = betas.getBody();
  Value bi = body->getArgument(0), hi = body->getArgument(1);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value lo, end;
  std::tie(lo, end) = runChunks(b, loc);
  llvm::SmallVector<Value> zeros;
  for (unsigned c : live)
    zeros.push_back(TileBuilder(b, loc).zeros(componentShapes[c]));
  LogicalResult status = success();
  Value count = arith::SubIOp::create(b, loc, end, lo);
  auto loop = scf::ForOp::create(
      b, loc, c0, count, c1, zeros,
      [&](OpBuilder &nb, Location l, Value i, ValueRange lambda) {
        Value c = arith::SubIOp::create(
            nb, l, arith::SubIOp::create(nb, l, end, c1), i);
        FailureOr<ChunkStep> step =
            emitChunkStep(nb, l, bi, hi, c, lambda, entryStates, true, {});
        if (failed(step)) {
          status = failure();
          scf::YieldOp::create(nb, l, lambda);
          return;
        }
        llvm::SmallVector<Value> next;
        for (auto [j, grad] : llvm::enumerate(step->lambda))
          next.push_back(
              linalg::CopyOp::create(nb, l, grad, lambda[j]).getResult(0));
        scf::YieldOp::create(nb, l, next);
      });
  if (failed(status))
    return failure();
  b.setInsertionPointToStart(betas.getTerminator().getBody());
  for (auto [j, c] : llvm::enumerate(live)) {
    auto [offsets, sizes, strides] = runPlace(b, bi, hi, runIndex, c);
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(j),
                                          betas.getRegionIterArgs()[j], offsets,
                                          sizes, strides);
  }
  enterPass(b, loc, body, false, false);
  return llvm::SmallVector<Value>(betas.getResults());
}

CombineOp PrefixVjpLowering::transposedCombine(OpBuilder &b, Location loc,
                                               llvm::ArrayRef<Value> state,
                                               ValueRange lambda,
                                               llvm::ArrayRef<Value> summary) {
  unsigned n = spec.components.size();
  Type f32 = b.getF32Type();
  llvm::SmallVector<Value> lhs, rhs;
  llvm::SmallVector<Type> auxTypes;
  for (unsigned part = 0; part < 3; ++part)
    for (unsigned cc = 0; cc < n; ++cc) {
      auxTypes.push_back(componentType(cc));
      Value a;
      if (part == 0)
        a = state[cc];
      else if (part == 1 && llvm::is_contained(live, cc))
        a = lambda[llvm::find(live, cc) - live.begin()];
      lhs.push_back(
          a ? a
            : Value(tensor::EmptyOp::create(b, loc, componentShapes[cc], f32)));
      rhs.push_back(part == 0 ? summary[cc]
                              : Value(tensor::EmptyOp::create(
                                    b, loc, componentShapes[cc], f32)));
    }
  return CombineOp::create(b, loc, TypeRange(auxTypes), auxMonoid, lhs, rhs);
}

FailureOr<PrefixVjpLowering::ReadoutParts>
PrefixVjpLowering::emitReadoutParts(TileBuilder &tb, const ChunkTiles &tiles,
                                    int64_t width) {
  ReadoutParts parts;
  FailureOr<Value> num = emitSum(
      tb, spec, tiles, forward.readouts[numIndex].terms, false, {chunk, width});
  if (failed(num))
    return failure();
  parts.num = *num;
  if (!den)
    return parts;
  FailureOr<Value> denom = emitSum(
      tb, spec, tiles, forward.readouts[denIndex].terms, false, {chunk});
  if (failed(denom))
    return failure();
  OpBuilder &b = tb.getBuilder();
  double eps = op.getEps().convertToDouble();
  parts.inverseDen = tb.generic(
      {*denom}, tb.empty({chunk}),
      {b.getMultiDimIdentityMap(1), b.getMultiDimIdentityMap(1)},
      {utils::IteratorType::parallel},
      [&](OpBuilder &eb, Location el, ValueRange args) -> Value {
        Value e = arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(eps));
        Value one = arith::ConstantOp::create(eb, el, eb.getF32FloatAttr(1));
        Value sum = arith::AddFOp::create(eb, el, args[0], e);
        return arith::DivFOp::create(eb, el, one, sum);
      });
  return parts;
}

FailureOr<PrefixVjpLowering::ChunkStep> PrefixVjpLowering::emitChunkStep(
    OpBuilder &nb, Location l, Value bi, Value hi, Value c, ValueRange lambda,
    llvm::ArrayRef<Value> entryStates, bool wantLambda,
    llvm::ArrayRef<unsigned> gradientsOf) {
  unsigned n = spec.components.size();
  const MonoidSpec &vjpSpec = backward.vjpSpec;
  auto isLive = [&](unsigned cc) { return llvm::is_contained(live, cc); };
  auto lambdaOf = [&](unsigned cc) {
    return lambda[llvm::find(live, cc) - live.begin()];
  };
  TileBuilder tb(nb, l);
  ChunkStep step;
  ChunkTiles tiles = loadChunk(nb, l, bi, hi, c, step.start, step.rows);
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
    FailureOr<ReadoutParts> parts =
        emitReadoutParts(tb, tiles, tb.shapeOf(g)[1]);
    if (failed(parts))
      return failure();
    Value num = parts->num, inv = parts->inverseDen;
    // d_num = g / (den + ε); d_den = −(g · num) / (den + ε)².
    cotangents[numIndex] = tb.scaleRows(g, inv);
    Value gn = tb.mul(tb.dotRows(g, num), tb.mul(inv, inv));
    cotangents[denIndex] = tb.scale(gn, -1.0);
  }

  // μ_A (λ of the previous chunk, through the combine) and μ_B.
  CombineOp transposed =
      transposedCombine(nb, l, tiles.carried, lambda, *summary);

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
      Value grad = lambdaThroughCombine(tb, transposed, cc);
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
  // Runs of equal numbers of chunks, none empty.
  if (segments > 1) {
    perRun = (numChunks + segments - 1) / segments;
    runs = (numChunks + perRun - 1) / perRun;
  }
  if (runs <= 1) {
    runs = 1;
    perRun = numChunks;
  }
  stackChunks = runs * perRun;
  if (failed(prepareValueTiles()))
    return failure();
  for (Value input : op.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    llvm::SmallVector<int64_t> rowShape = {length};
    if (type.getRank() == 4)
      rowShape.push_back(type.getDimSize(3));
    rowTypes.push_back(RankedTensorType::get(rowShape, type.getElementType()));
  }

  // 1. The state carried into every chunk, saved by a pass of its own
  // (with runs, after a pass computing the runs' totals).
  FailureOr<llvm::SmallVector<Value>> runTotals = llvm::SmallVector<Value>();
  if (runs > 1)
    runTotals = emitRunTotals(b);
  if (failed(runTotals))
    return failure();
  FailureOr<llvm::SmallVector<Value>> entryStates =
      saveEntryStates(b, *runTotals);
  if (failed(entryStates))
    return failure();
  // With runs, 2a: the λ each run hands on from zero.
  FailureOr<llvm::SmallVector<Value>> betas = llvm::SmallVector<Value>();
  if (runs > 1)
    betas = emitRunLambdas(b, *entryStates);
  if (failed(betas))
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
  // With runs each run writes its own copy of the initial state's gradient
  // (parallel writes must not overlap); the first run's is the gradient.
  for (auto [i, init] : llvm::enumerate(op.getInit()))
    inits.push_back(runs > 1
                        ? Value(tensor::EmptyOp::create(
                              b, loc, perRunType(carried[i]).getShape(), f32))
                        : emptyLike(init));
  scf::ForallOp loop;
  {
    OpBuilder::InsertionGuard guard(b);
    loop = beginPass(b, inits, parallelGradients, true);
    Block *body = loop.getBody();
    Value bi = body->getArgument(0), hi = body->getArgument(1);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value lo, end;
    std::tie(lo, end) = runChunks(b, loc);
    llvm::ArrayRef<BlockArgument> outs = loop.getRegionIterArgs();
    // A run's tokens [rowStart, rowStart + rowCount) (every token's
    // otherwise: null).
    Value rowStart, rowCount;
    if (runIndex) {
      Value size = arith::ConstantIndexOp::create(b, loc, chunk);
      rowStart = arith::MulIOp::create(b, loc, lo, size);
      rowCount = arith::SubIOp::create(
          b, loc,
          arith::MinSIOp::create(
              b, loc, arith::MulIOp::create(b, loc, end, size),
              arith::ConstantIndexOp::create(b, loc, length)),
          rowStart);
    }

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
    if (runIndex) {
      // The λ leaving this run: from the final one, back through the runs
      // after it (each one's total at the state entering it, then its β).
      Value count = arith::SubIOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, runs - 1), runIndex);
      Value lastRun = arith::ConstantIndexOp::create(b, loc, runs - 1);
      auto after = scf::ForOp::create(
          b, loc, c0, count, c1, loopInits,
          [&](OpBuilder &nb, Location l, Value i, ValueRange lambda) {
            Value r = arith::SubIOp::create(nb, l, lastRun, i);
            Value first = runStart(nb, l, r);
            llvm::SmallVector<Value> state(spec.components.size()), total;
            for (auto [j, cc] : llvm::enumerate(carried))
              state[cc] =
                  savedState(nb, l, (*entryStates)[j], bi, hi, cc, first);
            for (unsigned cc = 0; cc < spec.components.size(); ++cc) {
              auto [offsets, sizes, strides] = runPlace(nb, bi, hi, r, cc);
              total.push_back(tensor::ExtractSliceOp::create(
                  nb, l, componentType(cc), (*runTotals)[cc], offsets, sizes,
                  strides));
            }
            CombineOp transposed =
                transposedCombine(nb, l, state, lambda, total);
            TileBuilder tb(nb, l);
            llvm::SmallVector<Value> next;
            for (auto [j, cc] : llvm::enumerate(live)) {
              auto [offsets, sizes, strides] = runPlace(nb, bi, hi, r, cc);
              Value beta = tensor::ExtractSliceOp::create(
                  nb, l, componentType(cc), (*betas)[j], offsets, sizes,
                  strides);
              Value sum =
                  tb.add(lambdaThroughCombine(tb, transposed, cc), beta);
              next.push_back(
                  linalg::CopyOp::create(nb, l, sum, lambda[j]).getResult(0));
            }
            scf::YieldOp::create(nb, l, next);
          });
      loopInits.assign(after.getResults().begin(), after.getResults().end());
    }
    // (Written back in place, as in pass 1.)
    llvm::SmallVector<tensor::ExtractSliceOp> slices;
    for (size_t i = 0; i < numFirst; ++i) {
      if (parallelGradients) {
        auto [offsets, sizes, strides] = stackRowsPlace(b, bi, hi, live[i]);
        slices.push_back(tensor::ExtractSliceOp::create(
            b, loc, stackRowsType(live[i]), outs[i], offsets, sizes, strides));
      } else {
        auto [offsets, sizes, strides] =
            rowsPlace(b, bi, hi, i, rowStart, rowCount);
        llvm::SmallVector<int64_t> shape(rowTypes[i].getShape());
        if (runIndex)
          shape[0] = ShapedType::kDynamic;
        slices.push_back(tensor::ExtractSliceOp::create(
            b, loc, RankedTensorType::get(shape, rowTypes[i].getElementType()),
            outs[i], offsets, sizes, strides));
      }
      loopInits.push_back(slices.back());
    }
    LogicalResult status = success();
    Value count =
        runIndex ? Value(arith::SubIOp::create(b, loc, end, lo)) : end;
    auto backwardLoop = scf::ForOp::create(
        b, loc, c0, count, c1, loopInits,
        [&](OpBuilder &nb, Location l, Value i, ValueRange iter) {
          Value last = arith::SubIOp::create(nb, l, end, c1);
          Value c = arith::SubIOp::create(nb, l, last, i);
          llvm::SmallVector<Value> firsts;
          if (parallelGradients)
            for (auto [j, cc] : llvm::enumerate(live)) {
              // λ of this chunk, for pass 3 (in the run's slots).
              Value slot =
                  runIndex ? Value(arith::SubIOp::create(nb, l, c, lo)) : c;
              auto [offsets, sizes] = stackPlace(nb, l, cc, slot);
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
              firsts.push_back(
                  insertRows(nb, l, grad, iter[nl + s],
                             runIndex ? Value(arith::SubIOp::create(
                                            nb, l, step->start, rowStart))
                                      : step->start,
                             step->rows));
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
    for (auto [i, slice] : llvm::enumerate(slices))
      tensor::ParallelInsertSliceOp::create(
          b, loc, backwardLoop.getResult(nl + i), outs[i],
          slice.getMixedOffsets(), slice.getMixedSizes(),
          slice.getMixedStrides());
    // The initial state's gradient: λ carried out of the first chunk (every
    // carried component is live here, checked above).
    for (auto [i, c] : llvm::enumerate(carried)) {
      if (op.getInit().empty())
        break;
      auto [offsets, sizes, strides] = runIndex
                                           ? runPlace(b, bi, hi, runIndex, c)
                                           : statePlace(b, bi, hi, c);
      Value grad = backwardLoop.getResult(llvm::find(live, c) - live.begin());
      tensor::ParallelInsertSliceOp::create(b, loc, grad, outs[numFirst + i],
                                            offsets, sizes, strides);
    }
    enterPass(b, loc, body, false, false);
  }
  if (auto module = op->getParentOfType<ModuleOp>()) {
    std::string decision =
        spec.name + " backward: " +
        (!parallelGradients ? "two passes"
         : splitGradients   ? "parallel gradients split by input"
                            : "parallel gradients");
    if (runs > 1)
      decision += ", the sequential passes in " + std::to_string(runs) +
                  " runs of " + std::to_string(perRun) + " chunks";
    if (valueTiles > 1)
      decision += std::string(parallelGradients ? ", the sequential passes"
                                                : ", the first") +
                  " in " + std::to_string(valueTiles) + " value tiles of " +
                  std::to_string(valueWidth) + " columns";
    recordChunking(module, decision);
  }
  llvm::SmallVector<Value> results(loop.getResults().drop_front(numFirst));
  if (runs > 1)
    for (auto [i, c] : llvm::enumerate(carried)) {
      if (op.getInit().empty())
        break;
      // The first run's copy.
      auto type = cast<RankedTensorType>(op.getInit()[i].getType());
      RankedTensorType perRun = perRunType(c);
      llvm::SmallVector<OpFoldResult> offsets(perRun.getRank(), idx(b, 0)),
          sizes, strides(perRun.getRank(), idx(b, 1));
      for (int64_t size : perRun.getShape())
        sizes.push_back(idx(b, size));
      sizes[2] = idx(b, 1);
      results[i] = tensor::ExtractSliceOp::create(b, loc, type, results[i],
                                                  offsets, sizes, strides);
    }
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
  if (!op.getHeadParams().empty()) {
    FailureOr<Value> rates = emitDecayGradientPass(b, *entryStates, lambdas);
    if (failed(rates))
      return failure();
    results.push_back(*rates);
  }
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
  startMasks(b, loc);
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

FailureOr<Value> PrefixVjpLowering::emitDecayGradientPass(
    OpBuilder &b, llvm::ArrayRef<Value> entryStates, ValueRange lambdas) {
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  unsigned n = spec.components.size();
  // Each chunk's ∂L/∂log γ, [B, H, N].
  auto perChunk = scf::ForallOp::create(
      b, loc,
      llvm::ArrayRef<OpFoldResult>{idx(b, batch), idx(b, heads),
                                   idx(b, numChunks)},
      ValueRange{Value(tensor::EmptyOp::create(
          b, loc, ArrayRef<int64_t>{batch, heads, numChunks}, f32))},
      std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = perChunk.getBody();
    b.setInsertionPointToStart(body);
    Value bi = body->getArgument(0), hi = body->getArgument(1),
          c = body->getArgument(2);
    startMasks(b, loc);
    Value start, rows;
    ChunkTiles tiles = loadChunk(b, loc, bi, hi, c, start, rows);
    tiles.carried.assign(n, Value());
    llvm::SmallVector<Value> entry;
    for (auto [j, cc] : llvm::enumerate(carried)) {
      tiles.carried[cc] = savedState(b, loc, entryStates[j], bi, hi, cc, c);
      entry.push_back(tiles.carried[cc]);
    }
    Value g = loadRows(b, loc, op.getCotangent(), bi, hi, start, rows,
                       /*value=*/true);
    llvm::SmallVector<std::pair<Value, Value>> seeds;
    for (auto [j, cc] : llvm::enumerate(live))
      seeds.push_back({Value(), savedState(b, loc, lambdas[j], bi, hi, cc, c)});

    // The chunk's forward program, from its tokens and the saved state:
    // its readouts and the state it carries out.
    OpRecorder recorder(b);
    TileBuilder tb(b, loc);
    FailureOr<llvm::SmallVector<Value>> summary = emitSummaries(b, loc, tiles);
    if (failed(summary))
      return failure();
    FailureOr<ReadoutParts> parts =
        emitReadoutParts(tb, tiles, tb.shapeOf(g)[1]);
    if (failed(parts))
      return failure();
    Value out = parts->inverseDen ? tb.scaleRows(parts->num, parts->inverseDen)
                                  : parts->num;
    llvm::SmallVector<Type> fullTypes;
    for (unsigned cc = 0; cc < n; ++cc)
      fullTypes.push_back(componentType(cc));
    // The combine as linalg, which reverse differentiation reads (only the
    // live components' results have users: the placeholders below).
    llvm::SmallVector<Value> leaving =
        combineCarried(b, loc, op.getMonoid(), entry, *summary, fullTypes);
    auto combine = leaving.front().getDefiningOp<CombineOp>();
    for (auto [j, cc] : llvm::enumerate(live))
      seeds[j].first = leaving[llvm::find(carried, cc) - carried.begin()];
    llvm::SmallVector<Value> lowered;
    {
      // Users that keep the live results alive through the lowering.
      llvm::SmallVector<Value> kept;
      for (auto &seed : seeds)
        kept.push_back(seed.first);
      auto users = UnrealizedConversionCastOp::create(
          b, loc, TypeRange(ValueRange(kept)), kept);
      lowered = lowerCombineToLinalg(combine);
      users.erase();
    }
    for (auto [j, cc] : llvm::enumerate(live))
      seeds[j].first = lowered[cc];
    seeds.push_back({out, g});
    FailureOr<llvm::SmallVector<Value>> derivative =
        emitReverseDiff(b, loc, recorder.recorded(), seeds, {tiles.logDecay});
    if (failed(derivative))
      return chunkError(op) << "the decay rate's gradient is not derived";
    // ∂L/∂log γ sums products of the chunk's whole program against λ and
    // ḡ over every token: with bf16 operands (tensor cores), bf16 linear
    // attention's came out 1.17e-2 off (H100, 2026-12-07). Split where
    // the target rounds them (TileBuilder.h).
    if (bf16Products) {
      Bf16Parts known;
      splitMatrixProducts(b, {perChunk}, known);
    }
    b.setInsertionPointToStart(perChunk.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, loc, derivative->front(), perChunk.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{bi, hi, c},
        ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1)},
        ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1), idx(b, 1)});
  }
  // Summed over batch entries and chunks; ∂/∂γ = ∂/∂log γ / γ.
  MLIRContext *ctx = b.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);
  TileBuilder tb(b, loc);
  return tb.generic(
      {perChunk.getResult(0), op.getHeadParams()[0]}, tb.zeros({heads}),
      {AffineMap::get(3, 0, {d0, d1, d2}, ctx), AffineMap::get(3, 0, {d1}, ctx),
       AffineMap::get(3, 0, {d1}, ctx)},
      {utils::IteratorType::reduction, utils::IteratorType::parallel,
       utils::IteratorType::reduction},
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value share = arith::DivFOp::create(nb, l, args[0], args[1]);
        return arith::AddFOp::create(nb, l, args[2], share);
      });
}

LogicalResult
mlir::hla::chunk::lowerPrefixVjp(PrefixVjpOp op, int64_t chunk,
                                 bool parallelGradients, int64_t valueTile,
                                 int64_t parallelism, bool splitGradients,
                                 int64_t segments, bool bf16Products) {
  const MonoidSpec &spec = op.getMonoid().getSpec();
  std::string error;
  FailureOr<ChunkPlan> forward = buildChunkPlan(spec, error);
  if (failed(forward))
    return chunkError(op) << error;
  FailureOr<ChunkVjpPlan> backward = buildChunkVjpPlan(spec, error);
  if (failed(backward))
    return chunkError(op) << error;
  readSymmetricStatesAsStored(*backward, spec, !op.getInit().empty());
  // The decay rates' gradient reads λ per chunk, which parallel gradients
  // save.
  bool saveLambdas = parallelGradients || !op.getHeadParams().empty();
  bool rounded =
      bf16Products && cast<RankedTensorType>(op.getInputs()[0].getType())
                              .getElementType()
                              .getIntOrFloatBitWidth() == 16;
  return PrefixVjpLowering(op, chunk, saveLambdas, valueTile, parallelism,
                           splitGradients, segments, rounded, *forward,
                           *backward)
      .lower();
}
