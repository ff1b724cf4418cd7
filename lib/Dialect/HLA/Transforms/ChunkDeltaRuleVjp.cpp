//===- ChunkDeltaRuleVjp.cpp - The gated delta rule's backward ---*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla.prefix_vjp under the gated delta rule (KDA). Its transition is
// matrix-valued, so there is no index plan to differentiate (ChunkVjp.h);
// the chunk itself is: the WY/UT form that reads a chunk out from the
// state entering it and makes the state leaving it (DeltaRuleChunks) is a
// straight-line tile program, and its vector-Jacobian product is another
// (ReverseDiff.h), the triangular solve's adjoint included (the solve is
// products by doubling, each differentiated as a contraction). Per
// (batch entry, head):
//
//   1. a pass over the chunks saves the state S₀ entering each (a stack of
//      [N·dk, dv] per (batch entry, head));
//   2. a pass from the last chunk to the first carries λ, the cotangent of
//      the state leaving the chunk (the final state's cotangent, or zero,
//      after the last one). Each chunk recomputes its rows O and the state
//      S₁ it leaves from S₀ and its tokens, and the reverse program of that
//      computation, seeded with the rows' cotangent and λ, gives the
//      tokens' gradients (q, k, v, g, β) and ∂S₀, the previous chunk's λ.
//      The initial state's gradient is the λ leaving the first chunk.
//
// With parallel gradients, pass 2 only carries λ (differentiating each
// chunk with respect to S₀ alone), saving the λ leaving every chunk into a
// second stack, and
//
//   3. a pass parallel over (batch entry, head, chunk) differentiates each
//      chunk with respect to its tokens, from its saved S₀ and λ.
//
// Padding rows past a sequence's end hold zeros (g = 0, β = 0: identity
// tokens) and a zero cotangent, so they change no gradient.
//
//===----------------------------------------------------------------------===//

#include "ChunkBackward.h"

#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::chunk;

namespace {

class DeltaRuleVjpLowering {
public:
  DeltaRuleVjpLowering(PrefixVjpOp op, int64_t chunk, bool parallelGradients)
      : op(op), spec(op.getMonoid().getSpec()), chunk(chunk),
        parallelGradients(parallelGradients) {}

  LogicalResult lower();

private:
  Value constant(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, op.getLoc(), v);
  }
  std::pair<Value, Value> bounds(OpBuilder &b, Value c) {
    return chunkSpan(b, op.getLoc(), c, chunk, length);
  }
  /// Chunk `c`'s token tiles ([chunk, width] or [chunk], f32, zero-padded).
  ChunkTiles loadChunk(OpBuilder &b, Value bi, Value hi, Value start,
                       Value rows) {
    ChunkTiles tiles;
    tiles.chunk = chunk;
    tiles.length = rows;
    tiles.batch = bi;
    tiles.start = start;
    tiles.head = hi;
    for (Value input : op.getInputs())
      tiles.tokens.push_back(loadRows(b, input, bi, hi, start, rows));
    return tiles;
  }
  Value loadRows(OpBuilder &b, Value operand, Value bi, Value hi, Value start,
                 Value rows) {
    auto type = cast<RankedTensorType>(operand.getType());
    llvm::SmallVector<OpFoldResult> offsets = {bi, start, hi};
    int64_t width = 0;
    if (type.getRank() == 4) {
      offsets.push_back(idx(b, 0));
      width = type.getDimSize(3);
    }
    return loadChunkRows(b, op.getLoc(), operand, offsets, rows, chunk, width);
  }
  /// The [dk, dv] slice at (bi, hi) of a [B, H, dk, dv] tensor.
  Value stateOf(OpBuilder &b, Value state, Value bi, Value hi) {
    auto [offsets, sizes, strides] =
        pairSlice(b, bi, hi, {dk, dv}, {idx(b, 0), idx(b, 0)});
    Value slice = tensor::ExtractSliceOp::create(
        b, op.getLoc(),
        RankedTensorType::get(
            {dk, dv}, cast<RankedTensorType>(state.getType()).getElementType()),
        state, offsets, sizes, strides);
    return TileBuilder(b, op.getLoc()).castTo(slice, b.getF32Type());
  }

  /// A [B, H, N·dk, dv] stack of one state per chunk; where its (bi, hi)
  /// rows, as a loop carries them, are.
  Value emptyStack(OpBuilder &b);
  std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
             llvm::SmallVector<OpFoldResult>>
  stackRowsPlace(OpBuilder &b, Value bi, Value hi) {
    return pairSlice(b, bi, hi, {numChunks * dk, dv}, {idx(b, 0), idx(b, 0)});
  }
  /// `state` written into the carried stack rows `rows` at chunk `c`.
  Value saveInto(OpBuilder &b, Value state, Value rows, Value c);
  /// Chunk `c`'s state in `stack`.
  Value savedState(OpBuilder &b, Value stack, Value bi, Value hi, Value c);

  /// What one chunk's reverse gives.
  struct Step {
    /// ∂S₀, the previous chunk's λ (with `wantLambda`).
    Value lambda;
    /// Per input, the gradient of the chunk's valid rows (with
    /// `wantTokens`), in the input's element type.
    llvm::SmallVector<Value> gradients;
    Value start, count;
  };
  /// Chunk `c` of (bi, hi) recomputed from its saved entry state and
  /// reversed with the rows' cotangent and `lambda`, the cotangent of the
  /// state leaving it.
  FailureOr<Step> emitStep(OpBuilder &b, DeltaRuleChunks &chunks, Value bi,
                           Value hi, Value c, Value entryStates, Value lambda,
                           bool wantLambda, bool wantTokens);

  /// Pass 1: the stack of the states entering the chunks.
  Value saveEntryStates(OpBuilder &b, DeltaRuleChunks &chunks,
                        LogicalResult &status);
  /// Pass 2: the inputs' gradients (with parallel gradients: the stack of
  /// the λ leaving each chunk), then the initial state's.
  llvm::SmallVector<Value> reversePass(OpBuilder &b, DeltaRuleChunks &chunks,
                                       Value entryStates,
                                       LogicalResult &status);
  /// Pass 3 (parallel gradients): the inputs' gradients, per chunk.
  llvm::SmallVector<Value> gradientPass(OpBuilder &b, DeltaRuleChunks &chunks,
                                        Value entryStates, Value lambdas,
                                        LogicalResult &status);

  PrefixVjpOp op;
  const MonoidSpec &spec;
  int64_t chunk;
  bool parallelGradients;
  int64_t batch = 0, length = 0, heads = 0, numChunks = 0, dk = 0, dv = 0;
};

/// Starts a forall over (batch entry, head) with shared outputs `inits`;
/// `b` moves into its body.
scf::ForallOp beginPass(OpBuilder &b, Location loc, int64_t batch,
                        int64_t heads, ValueRange inits) {
  llvm::SmallVector<OpFoldResult> bounds = {idx(b, batch), idx(b, heads)};
  auto loop = scf::ForallOp::create(b, loc, bounds, inits, std::nullopt);
  b.setInsertionPointToStart(loop.getBody());
  return loop;
}

Value DeltaRuleVjpLowering::emptyStack(OpBuilder &b) {
  return tensor::EmptyOp::create(
      b, op.getLoc(),
      llvm::SmallVector<int64_t>{batch, heads, numChunks * dk, dv},
      b.getF32Type());
}

Value DeltaRuleVjpLowering::saveInto(OpBuilder &b, Value state, Value rows,
                                     Value c) {
  Location loc = op.getLoc();
  Value at = arith::MulIOp::create(b, loc, c, constant(b, dk));
  return tensor::InsertSliceOp::create(
      b, loc, state, rows, llvm::ArrayRef<OpFoldResult>{at, idx(b, 0)},
      llvm::ArrayRef<OpFoldResult>{idx(b, dk), idx(b, dv)},
      llvm::ArrayRef<OpFoldResult>{idx(b, 1), idx(b, 1)});
}

Value DeltaRuleVjpLowering::savedState(OpBuilder &b, Value stack, Value bi,
                                       Value hi, Value c) {
  Location loc = op.getLoc();
  Value at = arith::MulIOp::create(b, loc, c, constant(b, dk));
  auto [offsets, sizes, strides] =
      pairSlice(b, bi, hi, {dk, dv}, {at, idx(b, 0)});
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({dk, dv}, b.getF32Type()), stack, offsets,
      sizes, strides);
}

FailureOr<DeltaRuleVjpLowering::Step>
DeltaRuleVjpLowering::emitStep(OpBuilder &b, DeltaRuleChunks &chunks, Value bi,
                               Value hi, Value c, Value entryStates,
                               Value lambda, bool wantLambda, bool wantTokens) {
  Location loc = op.getLoc();
  Step step;
  std::tie(step.start, step.count) = bounds(b, c);
  ChunkTiles tiles = loadChunk(b, bi, hi, step.start, step.count);
  Value entry = savedState(b, entryStates, bi, hi, c);
  Value cotangent =
      loadRows(b, op.getCotangent(), bi, hi, step.start, step.count);

  // The chunk's forward, recorded, then its reverse.
  OpRecorder recorder(b);
  FailureOr<llvm::SmallVector<Value>> rows =
      chunks.emit(b, loc, tiles, DeltaRuleChunks::Part::Rows, entry);
  FailureOr<llvm::SmallVector<Value>> next =
      chunks.emit(b, loc, tiles, DeltaRuleChunks::Part::NextState, entry);
  if (failed(rows) || failed(next))
    return failure();
  llvm::SmallVector<Value> wrt;
  if (wantTokens)
    wrt = tiles.tokens;
  if (wantLambda)
    wrt.push_back(entry);
  // The chunk's triangular solve reversed by its closed form.
  llvm::SmallVector<Operation *> program = recorder.recorded();
  llvm::DenseSet<Operation *> inProgram(program.begin(), program.end());
  llvm::SmallVector<ClosedFormVjp> solves;
  for (const ClosedFormVjp &solve : chunks.solves())
    if (inProgram.contains(solve.result.getDefiningOp()))
      solves.push_back(solve);
  FailureOr<llvm::SmallVector<Value>> grads = emitReverseDiff(
      b, loc, program, {{rows->front(), cotangent}, {next->front(), lambda}},
      wrt, solves);
  if (failed(grads))
    return failure();
  if (wantLambda)
    step.lambda = grads->back();
  if (!wantTokens)
    return step;
  TileBuilder tb(b, loc);
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    Value grad = tb.castTo((*grads)[i], type.getElementType());
    llvm::SmallVector<OpFoldResult> zeros = {idx(b, 0)}, valid = {step.count};
    llvm::SmallVector<int64_t> validShape = {ShapedType::kDynamic};
    if (type.getRank() == 4) {
      zeros.push_back(idx(b, 0));
      valid.push_back(idx(b, type.getDimSize(3)));
      validShape.push_back(type.getDimSize(3));
    }
    llvm::SmallVector<OpFoldResult> ones(zeros.size(), idx(b, 1));
    step.gradients.push_back(tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(validShape, type.getElementType()), grad,
        zeros, valid, ones));
  }
  return step;
}

Value DeltaRuleVjpLowering::saveEntryStates(OpBuilder &b,
                                            DeltaRuleChunks &chunks,
                                            LogicalResult &status) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(b);
  scf::ForallOp pass = beginPass(b, loc, batch, heads, emptyStack(b));
  Value bi = pass.getBody()->getArgument(0),
        hi = pass.getBody()->getArgument(1);
  auto [offsets, sizes, strides] = stackRowsPlace(b, bi, hi);
  Value rows = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({numChunks * dk, dv}, b.getF32Type()),
      pass.getRegionIterArgs()[0], offsets, sizes, strides);
  TileBuilder tb(b, loc);
  Value initial = op.getInit().empty() ? tb.zeros({dk, dv})
                                       : stateOf(b, op.getInit()[0], bi, hi);
  auto loop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, numChunks), constant(b, 1),
      ValueRange{initial, rows},
      [&](OpBuilder &nb, Location l, Value c, ValueRange iter) {
        Value saved = saveInto(nb, iter[0], iter[1], c);
        auto [start, count] = bounds(nb, c);
        ChunkTiles tiles = loadChunk(nb, bi, hi, start, count);
        FailureOr<llvm::SmallVector<Value>> next = chunks.emit(
            nb, l, tiles, DeltaRuleChunks::Part::NextState, iter[0]);
        if (failed(next)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        // Written over the carried state after its last read: one buffer
        // for the loop (allocations carried by loops would need ownership
        // tracking at run time).
        Value state =
            linalg::CopyOp::create(nb, l, next->front(), iter[0]).getResult(0);
        scf::YieldOp::create(nb, l, ValueRange{state, saved});
      });
  b.setInsertionPointToStart(pass.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(1),
                                        pass.getRegionIterArgs()[0], offsets,
                                        sizes, strides);
  return pass.getResult(0);
}

/// Rows [start, start + count) of one (batch entry, head) of a [B, T, H,
/// ...] tensor: offsets, sizes and strides.
static std::tuple<llvm::SmallVector<OpFoldResult>,
                  llvm::SmallVector<OpFoldResult>,
                  llvm::SmallVector<OpFoldResult>>
rowsPlace(OpBuilder &b, RankedTensorType type, Value bi, Value hi,
          OpFoldResult start, OpFoldResult count) {
  llvm::SmallVector<OpFoldResult> offsets = {bi, start, hi},
                                  sizes = {idx(b, 1), count, idx(b, 1)};
  if (type.getRank() == 4) {
    offsets.push_back(idx(b, 0));
    sizes.push_back(idx(b, type.getDimSize(3)));
  }
  llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
  return std::make_tuple(offsets, sizes, strides);
}

llvm::SmallVector<Value>
DeltaRuleVjpLowering::reversePass(OpBuilder &b, DeltaRuleChunks &chunks,
                                  Value entryStates, LogicalResult &status) {
  Location loc = op.getLoc();
  unsigned numInputs = op.getInputs().size();
  // Shared outputs: the inputs' gradients, or λ's stack; then ∂S₀.
  llvm::SmallVector<Value> inits;
  if (parallelGradients)
    inits.push_back(emptyStack(b));
  for (Value v : llvm::concat<Value>(
           parallelGradients ? ValueRange() : op.getInputs(), op.getInit())) {
    auto type = cast<RankedTensorType>(v.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  size_t numFirst = parallelGradients ? 1 : numInputs;
  OpBuilder::InsertionGuard guard(b);
  scf::ForallOp pass = beginPass(b, loc, batch, heads, inits);
  Value bi = pass.getBody()->getArgument(0),
        hi = pass.getBody()->getArgument(1);
  ValueRange shared = pass.getRegionIterArgs();

  // Carried: λ (from the final state's cotangent, or zero), then the
  // (bi, hi) rows of each first output.
  using Place = std::tuple<llvm::SmallVector<OpFoldResult>,
                           llvm::SmallVector<OpFoldResult>,
                           llvm::SmallVector<OpFoldResult>>;
  llvm::SmallVector<Place> places;
  TileBuilder tb(b, loc);
  llvm::SmallVector<Value> loopInits = {
      op.getFinalCotangent().empty()
          ? tb.zeros({dk, dv})
          : stateOf(b, op.getFinalCotangent()[0], bi, hi)};
  for (size_t i = 0; i < numFirst; ++i) {
    auto type = cast<RankedTensorType>(shared[i].getType());
    places.push_back(parallelGradients ? stackRowsPlace(b, bi, hi)
                                       : rowsPlace(b, type, bi, hi, idx(b, 0),
                                                   idx(b, length)));
    auto [offsets, sizes, strides] = places.back();
    llvm::SmallVector<int64_t> rowShape = {parallelGradients ? numChunks * dk
                                                             : length};
    if (type.getRank() == 4)
      rowShape.push_back(type.getDimSize(3));
    loopInits.push_back(tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(rowShape, type.getElementType()),
        shared[i], offsets, sizes, strides));
  }

  auto loop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, numChunks), constant(b, 1), loopInits,
      [&](OpBuilder &nb, Location l, Value j, ValueRange iter) {
        // From the last chunk to the first.
        Value c = arith::SubIOp::create(nb, l, constant(nb, numChunks - 1), j);
        FailureOr<Step> step =
            emitStep(nb, chunks, bi, hi, c, entryStates, iter[0],
                     /*wantLambda=*/true, /*wantTokens=*/!parallelGradients);
        if (failed(step)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        // The λ leaving this chunk, for pass 3 (saved before λ is written
        // over itself, one buffer as pass 1's state).
        Value saved =
            parallelGradients ? saveInto(nb, iter[0], iter[1], c) : Value();
        llvm::SmallVector<Value> yields = {
            linalg::CopyOp::create(nb, l, step->lambda, iter[0]).getResult(0)};
        if (parallelGradients) {
          yields.push_back(saved);
        } else {
          for (auto [i, grad] : llvm::enumerate(step->gradients)) {
            auto rowType = cast<RankedTensorType>(iter[1 + i].getType());
            llvm::SmallVector<OpFoldResult> at = {step->start},
                                            valid = {step->count};
            if (rowType.getRank() == 2) {
              at.push_back(idx(nb, 0));
              valid.push_back(idx(nb, rowType.getDimSize(1)));
            }
            llvm::SmallVector<OpFoldResult> ones(at.size(), idx(nb, 1));
            yields.push_back(tensor::InsertSliceOp::create(
                nb, l, grad, iter[1 + i], at, valid, ones));
          }
        }
        scf::YieldOp::create(nb, l, yields);
      });

  if (!op.getInit().empty()) {
    // ∂S₀: the λ leaving the first chunk, in the initial state's type.
    Type element =
        cast<RankedTensorType>(shared[numFirst].getType()).getElementType();
    Value grad = TileBuilder(b, loc).castTo(loop.getResult(0), element);
    b.setInsertionPointToEnd(pass.getTerminator().getBody());
    auto [offsets, sizes, strides] =
        pairSlice(b, bi, hi, {dk, dv}, {idx(b, 0), idx(b, 0)});
    tensor::ParallelInsertSliceOp::create(b, loc, grad, shared[numFirst],
                                          offsets, sizes, strides);
  }
  b.setInsertionPointToStart(pass.getTerminator().getBody());
  for (size_t i = 0; i < numFirst; ++i) {
    auto [offsets, sizes, strides] = places[i];
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(1 + i),
                                          shared[i], offsets, sizes, strides);
  }
  return llvm::SmallVector<Value>(pass.getResults());
}

llvm::SmallVector<Value>
DeltaRuleVjpLowering::gradientPass(OpBuilder &b, DeltaRuleChunks &chunks,
                                   Value entryStates, Value lambdas,
                                   LogicalResult &status) {
  Location loc = op.getLoc();
  llvm::SmallVector<Value> inits;
  for (Value v : op.getInputs()) {
    auto type = cast<RankedTensorType>(v.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  OpBuilder::InsertionGuard guard(b);
  llvm::SmallVector<OpFoldResult> bounds = {idx(b, batch), idx(b, heads),
                                            idx(b, numChunks)};
  auto pass = scf::ForallOp::create(b, loc, bounds, inits, std::nullopt);
  Block *body = pass.getBody();
  b.setInsertionPointToStart(body);
  Value bi = body->getArgument(0), hi = body->getArgument(1),
        c = body->getArgument(2);
  FailureOr<Step> step =
      emitStep(b, chunks, bi, hi, c, entryStates,
               savedState(b, lambdas, bi, hi, c), /*wantLambda=*/false,
               /*wantTokens=*/true);
  if (failed(step)) {
    status = failure();
    return {};
  }
  b.setInsertionPointToStart(pass.getTerminator().getBody());
  for (auto [i, grad] : llvm::enumerate(step->gradients)) {
    auto type = cast<RankedTensorType>(inits[i].getType());
    auto [offsets, sizes, strides] =
        rowsPlace(b, type, bi, hi, step->start, step->count);
    tensor::ParallelInsertSliceOp::create(
        b, loc, grad, pass.getRegionIterArgs()[i], offsets, sizes, strides);
  }
  return llvm::SmallVector<Value>(pass.getResults());
}

LogicalResult DeltaRuleVjpLowering::lower() {
  for (Value v : op->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return chunkError(op) << "the chunked backward needs static shapes";
  auto q =
      cast<RankedTensorType>(op.getInputs()[*spec.findInput("q")].getType());
  auto v =
      cast<RankedTensorType>(op.getInputs()[*spec.findInput("v")].getType());
  batch = q.getDimSize(0);
  length = q.getDimSize(1);
  heads = q.getDimSize(2);
  dk = q.getDimSize(3);
  dv = v.getDimSize(3);
  numChunks = (length + chunk - 1) / chunk;
  if (op.getInit().size() > 1 || op.getFinalCotangent().size() > 1)
    return chunkError(op) << "the gated delta rule carries one state (S)";

  Value g = op.getInputs()[*spec.findInput("g")];
  bool f16Gates = getElementTypeOrSelf(g.getType()).isF16();
  // The forward pass as the forward kernels build it; the reverse one with
  // every tile read through a projection of its loops (see
  // DeltaRuleChunks::projectionsOnly).
  DeltaRuleChunks forward(spec, chunk, f16Gates);
  DeltaRuleChunks reverse(spec, chunk, f16Gates);
  reverse.projectionsOnly = true;

  OpBuilder b(op);
  LogicalResult status = success();
  Value entryStates = saveEntryStates(b, forward, status);
  if (failed(status))
    return failure();
  llvm::SmallVector<Value> results =
      reversePass(b, reverse, entryStates, status);
  if (failed(status))
    return failure();
  if (parallelGradients) {
    // Pass 2 gave λ's stack, then ∂S₀.
    llvm::SmallVector<Value> gradients =
        gradientPass(b, reverse, entryStates, results.front(), status);
    if (failed(status))
      return failure();
    llvm::append_range(gradients, llvm::drop_begin(results));
    results = gradients;
  }
  if (auto module = op->getParentOfType<ModuleOp>())
    recordChunking(
        module, spec.name + " backward: " +
                    (parallelGradients ? "parallel gradients" : "two passes") +
                    ", the chunk's WY/UT form differentiated in reverse");
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

} // namespace

LogicalResult mlir::hla::chunk::lowerDeltaRuleVjp(PrefixVjpOp op, int64_t chunk,
                                                  bool parallelGradients) {
  return DeltaRuleVjpLowering(op, chunk, parallelGradients).lower();
}
