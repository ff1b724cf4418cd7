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
  DeltaRuleVjpLowering(PrefixVjpOp op, int64_t chunk)
      : op(op), spec(op.getMonoid().getSpec()), chunk(chunk) {}

  LogicalResult lower();

private:
  Value constant(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, op.getLoc(), v);
  }
  /// Chunk `c`'s first token and token count.
  std::pair<Value, Value> bounds(OpBuilder &b, Value c) {
    Location loc = op.getLoc();
    Value start = arith::MulIOp::create(b, loc, c, constant(b, chunk));
    Value rest = arith::SubIOp::create(b, loc, constant(b, length), start);
    return {start, arith::MinSIOp::create(b, loc, rest, constant(b, chunk))};
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
    return castToF32(b, slice);
  }
  Value castToF32(OpBuilder &b, Value tile) {
    TileBuilder tb(b, op.getLoc());
    return tb.castTo(tile, b.getF32Type());
  }

  /// Pass 1: the [B, H, N·dk, dv] stack of the states entering the chunks.
  Value saveEntryStates(OpBuilder &b, DeltaRuleChunks &chunks,
                        LogicalResult &status);
  /// Pass 2: the inputs' gradients, then the initial state's.
  llvm::SmallVector<Value> reversePass(OpBuilder &b, DeltaRuleChunks &chunks,
                                       Value entryStates,
                                       LogicalResult &status);

  PrefixVjpOp op;
  const MonoidSpec &spec;
  int64_t chunk;
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

Value DeltaRuleVjpLowering::saveEntryStates(OpBuilder &b,
                                            DeltaRuleChunks &chunks,
                                            LogicalResult &status) {
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  Value stack = tensor::EmptyOp::create(
      b, loc, llvm::SmallVector<int64_t>{batch, heads, numChunks * dk, dv},
      f32);
  OpBuilder::InsertionGuard guard(b);
  scf::ForallOp pass = beginPass(b, loc, batch, heads, stack);
  Value bi = pass.getBody()->getArgument(0),
        hi = pass.getBody()->getArgument(1);
  auto [offsets, sizes, strides] =
      pairSlice(b, bi, hi, {numChunks * dk, dv}, {idx(b, 0), idx(b, 0)});
  auto rowsType = RankedTensorType::get({numChunks * dk, dv}, f32);
  Value rows = tensor::ExtractSliceOp::create(
      b, loc, rowsType, pass.getRegionIterArgs()[0], offsets, sizes, strides);
  TileBuilder tb(b, loc);
  Value initial = op.getInit().empty() ? tb.zeros({dk, dv})
                                       : stateOf(b, op.getInit()[0], bi, hi);
  auto loop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, numChunks), constant(b, 1),
      ValueRange{initial, rows},
      [&](OpBuilder &nb, Location l, Value c, ValueRange iter) {
        Value at = arith::MulIOp::create(nb, l, c, constant(nb, dk));
        Value saved = tensor::InsertSliceOp::create(
            nb, l, iter[0], iter[1],
            llvm::ArrayRef<OpFoldResult>{at, idx(nb, 0)},
            llvm::ArrayRef<OpFoldResult>{idx(nb, dk), idx(nb, dv)},
            llvm::ArrayRef<OpFoldResult>{idx(nb, 1), idx(nb, 1)});
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

llvm::SmallVector<Value>
DeltaRuleVjpLowering::reversePass(OpBuilder &b, DeltaRuleChunks &chunks,
                                  Value entryStates, LogicalResult &status) {
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  unsigned numInputs = op.getInputs().size();
  llvm::SmallVector<Value> inits;
  for (Value v : llvm::concat<Value>(op.getInputs(), op.getInit())) {
    auto type = cast<RankedTensorType>(v.getType());
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
  }
  OpBuilder::InsertionGuard guard(b);
  scf::ForallOp pass = beginPass(b, loc, batch, heads, inits);
  Value bi = pass.getBody()->getArgument(0),
        hi = pass.getBody()->getArgument(1);
  ValueRange shared = pass.getRegionIterArgs();

  // Each input's gradient rows for (bi, hi): [T, width] or [T].
  using Place = std::tuple<llvm::SmallVector<OpFoldResult>,
                           llvm::SmallVector<OpFoldResult>,
                           llvm::SmallVector<OpFoldResult>>;
  llvm::SmallVector<Place> places;
  llvm::SmallVector<Value> loopInits;
  TileBuilder tb(b, loc);
  loopInits.push_back(op.getFinalCotangent().empty()
                          ? tb.zeros({dk, dv})
                          : stateOf(b, op.getFinalCotangent()[0], bi, hi));
  for (unsigned i = 0; i < numInputs; ++i) {
    auto type = cast<RankedTensorType>(inits[i].getType());
    llvm::SmallVector<OpFoldResult> offsets = {bi, idx(b, 0), hi},
                                    sizes = {idx(b, 1), idx(b, length),
                                             idx(b, 1)};
    llvm::SmallVector<int64_t> rowShape = {length};
    if (type.getRank() == 4) {
      offsets.push_back(idx(b, 0));
      sizes.push_back(idx(b, type.getDimSize(3)));
      rowShape.push_back(type.getDimSize(3));
    }
    llvm::SmallVector<OpFoldResult> strides(offsets.size(), idx(b, 1));
    loopInits.push_back(tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(rowShape, type.getElementType()),
        shared[i], offsets, sizes, strides));
    places.emplace_back(offsets, sizes, strides);
  }

  auto loop = scf::ForOp::create(
      b, loc, constant(b, 0), constant(b, numChunks), constant(b, 1), loopInits,
      [&](OpBuilder &nb, Location l, Value j, ValueRange iter) {
        // From the last chunk to the first.
        Value c = arith::SubIOp::create(nb, l, constant(nb, numChunks - 1), j);
        auto [start, count] = bounds(nb, c);
        ChunkTiles tiles = loadChunk(nb, bi, hi, start, count);
        Value at = arith::MulIOp::create(nb, l, c, constant(nb, dk));
        auto [offsets, sizes, strides] =
            pairSlice(nb, bi, hi, {dk, dv}, {at, idx(nb, 0)});
        Value entry = tensor::ExtractSliceOp::create(
            nb, l, RankedTensorType::get({dk, dv}, f32), entryStates, offsets,
            sizes, strides);
        Value cotangent = loadRows(nb, op.getCotangent(), bi, hi, start, count);

        // The chunk's forward, recorded, then its reverse.
        OpRecorder recorder(nb);
        FailureOr<llvm::SmallVector<Value>> rows =
            chunks.emit(nb, l, tiles, DeltaRuleChunks::Part::Rows, entry);
        FailureOr<llvm::SmallVector<Value>> next =
            chunks.emit(nb, l, tiles, DeltaRuleChunks::Part::NextState, entry);
        FailureOr<llvm::SmallVector<Value>> grads = failure();
        if (succeeded(rows) && succeeded(next)) {
          llvm::SmallVector<Value> wrt(tiles.tokens);
          wrt.push_back(entry);
          grads = emitReverseDiff(
              nb, l, recorder.recorded(),
              {{rows->front(), cotangent}, {next->front(), iter[0]}}, wrt);
        }
        if (failed(grads)) {
          status = failure();
          scf::YieldOp::create(nb, l, iter);
          return;
        }
        // λ written over itself (one buffer, as pass 1's state).
        llvm::SmallVector<Value> yields = {
            linalg::CopyOp::create(nb, l, grads->back(), iter[0]).getResult(0)};
        TileBuilder ntb(nb, l);
        for (unsigned i = 0; i < numInputs; ++i) {
          auto rowType = cast<RankedTensorType>(iter[1 + i].getType());
          Value grad = ntb.castTo((*grads)[i], rowType.getElementType());
          llvm::SmallVector<OpFoldResult> zeros = {idx(nb, 0)}, valid = {count},
                                          at = {start};
          llvm::SmallVector<int64_t> validShape = {ShapedType::kDynamic};
          if (rowType.getRank() == 2) {
            zeros.push_back(idx(nb, 0));
            valid.push_back(idx(nb, rowType.getDimSize(1)));
            at.push_back(idx(nb, 0));
            validShape.push_back(rowType.getDimSize(1));
          }
          llvm::SmallVector<OpFoldResult> ones(zeros.size(), idx(nb, 1));
          Value part = tensor::ExtractSliceOp::create(
              nb, l,
              RankedTensorType::get(validShape, rowType.getElementType()), grad,
              zeros, valid, ones);
          yields.push_back(tensor::InsertSliceOp::create(
              nb, l, part, iter[1 + i], at, valid, ones));
        }
        scf::YieldOp::create(nb, l, yields);
      });

  b.setInsertionPointToStart(pass.getTerminator().getBody());
  for (unsigned i = 0; i < numInputs; ++i) {
    auto [offsets, sizes, strides] = places[i];
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(1 + i),
                                          shared[i], offsets, sizes, strides);
  }
  if (!op.getInit().empty()) {
    // ∂S₀: the λ leaving the first chunk, in the initial state's type.
    b.setInsertionPoint(pass.getTerminator());
    Type element =
        cast<RankedTensorType>(shared[numInputs].getType()).getElementType();
    Value grad = TileBuilder(b, loc).castTo(loop.getResult(0), element);
    b.setInsertionPointToEnd(pass.getTerminator().getBody());
    auto [offsets, sizes, strides] =
        pairSlice(b, bi, hi, {dk, dv}, {idx(b, 0), idx(b, 0)});
    tensor::ParallelInsertSliceOp::create(b, loc, grad, shared[numInputs],
                                          offsets, sizes, strides);
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
  // every pair's decay elementwise (projections only, see DeltaRuleChunks).
  DeltaRuleChunks forward(spec, chunk, f16Gates);
  DeltaRuleChunks reverse(spec, chunk, f16Gates);
  reverse.pairBlocks = false;

  OpBuilder b(op);
  LogicalResult status = success();
  Value entryStates = saveEntryStates(b, forward, status);
  if (failed(status))
    return failure();
  llvm::SmallVector<Value> results =
      reversePass(b, reverse, entryStates, status);
  if (failed(status))
    return failure();
  if (auto module = op->getParentOfType<ModuleOp>())
    recordChunking(module, spec.name + " backward: two passes, the chunk's "
                                       "WY/UT form differentiated in reverse");
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

} // namespace

LogicalResult mlir::hla::chunk::lowerDeltaRuleVjp(PrefixVjpOp op,
                                                  int64_t chunk) {
  return DeltaRuleVjpLowering(op, chunk).lower();
}
