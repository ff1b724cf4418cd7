//===- ChunkBackward.h - hla.prefix_vjp's lowering --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The lowering of hla.prefix_vjp to loops over chunks, shared by
// ChunkBackward.cpp (the passes) and ChunkBackwardPlaces.cpp (where each
// pass's tiles live in the stacks, rows and states: value tiles and runs).
// See ChunkBackward.cpp for the algorithm.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_TRANSFORMS_CHUNKBACKWARD_H
#define HLA_LIB_DIALECT_HLA_TRANSFORMS_CHUNKBACKWARD_H

#include "ChunkRewriter.h"

#include "hla/Dialect/HLA/Transforms/ChunkVjp.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::hla::chunk {

/// Offsets, sizes and strides of the [shape] slice at (bi, hi, offsets...)
/// of a [B, H, ...] tensor.
inline std::tuple<llvm::SmallVector<OpFoldResult>,
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

/// Chunk `c`'s first token and token count, chunks of `chunk` tokens over
/// `length` (the last one ragged).
inline std::pair<Value, Value> chunkSpan(OpBuilder &b, Location loc, Value c,
                                         int64_t chunk, int64_t length) {
  Value size = arith::ConstantIndexOp::create(b, loc, chunk);
  Value start = arith::MulIOp::create(b, loc, c, size);
  Value rest = arith::SubIOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, length), start);
  return {start, arith::MinSIOp::create(b, loc, rest, size)};
}

/// Lowers one hla.prefix_vjp: the passes of ChunkBackward.cpp, each built
/// for the value tile or run `enterPass` selects.
class PrefixVjpLowering {
public:
  PrefixVjpLowering(PrefixVjpOp op, int64_t chunk, bool parallelGradients,
                    int64_t valueTile, int64_t parallelism, bool splitGradients,
                    int64_t segments, bool bf16Products,
                    const ChunkPlan &forward, const ChunkVjpPlan &backward)
      : op(op), spec(op.getMonoid().getSpec()), chunk(chunk),
        parallelGradients(parallelGradients), valueTile(valueTile),
        parallelism(parallelism), splitGradients(splitGradients),
        bf16Products(bf16Products), segments(segments), forward(forward),
        backward(backward) {
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
  /// The bounds of a pass over (batch entry, head[, value tile or run]):
  /// by value tile where `tiled` and there are tiles, else by run where
  /// `overRuns` and there are runs. `enterPass` selects its body's columns
  /// or run (and `enterPass(..., false, false)` all of them again).
  llvm::SmallVector<OpFoldResult> passBounds(OpBuilder &b, bool tiled,
                                             bool overRuns) const;
  void enterPass(OpBuilder &b, Location loc, Block *body, bool tiled,
                 bool overRuns);
  /// Starts such a pass with shared outputs `inits`: `b` moves into its
  /// body, which makes its masks first (`decay`) and whose columns or run
  /// are selected.
  scf::ForallOp beginPass(OpBuilder &b, ValueRange inits, bool tiled,
                          bool overRuns);
  /// Starts a loop body's masks: made on first use, from inside the inner
  /// loops, they go at `b`'s insertion point (before those loops).
  void startMasks(OpBuilder &b, Location loc);
  /// The chunks [lo, hi) of the current run (all chunks outside runs).
  std::pair<Value, Value> runChunks(OpBuilder &b, Location loc) const;
  /// Run `r`'s first chunk.
  Value runStart(OpBuilder &b, Location loc, Value r) const {
    return arith::MulIOp::create(
        b, loc, r, arith::ConstantIndexOp::create(b, loc, perRun));
  }

  /// The chunk's rows [start, start + length) of a [B, T, H, ...] operand,
  /// zero-padded to `chunk` rows, f32; of a value operand (`value`), the
  /// current tile's columns.
  Value loadRows(OpBuilder &b, Location loc, Value operand, Value batch,
                 Value head, Value start, Value length, bool value = false);
  /// Chunk `c`'s token tiles (value inputs: the current tile's columns),
  /// with no carried states; its first token and count in `start`, `rows`.
  ChunkTiles loadChunk(OpBuilder &b, Location loc, Value batch, Value head,
                       Value c, Value &start, Value &rows);
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
  /// With runs, each run starts from the totals (`runTotals`, pass 1a) of
  /// the runs before it.
  FailureOr<llvm::SmallVector<Value>> saveEntryStates(OpBuilder &b,
                                                      ValueRange runTotals);
  RankedTensorType componentType(unsigned c) const {
    return RankedTensorType::get(componentShapes[c],
                                 Float32Type::get(op->getContext()));
  }
  RankedTensorType stackType(unsigned c) const;
  /// Slot `at`'s place in a (batch entry, head[, value tile or run]) slice
  /// of a stack (a run's slots are its chunks from its first).
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

  /// A chunk's readout rows: num [c, width], and with a den readout
  /// 1 / (den + ε) [c] (null without one).
  struct ReadoutParts {
    Value num, inverseDen;
  };
  FailureOr<ReadoutParts>
  emitReadoutParts(TileBuilder &tb, const ChunkTiles &tiles, int64_t width);

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
  /// The transposed combine (under the auxiliary monoid) of `state` (per
  /// component; null where not carried) with `summary` (every component),
  /// at λ `lambda` (per live component).
  CombineOp transposedCombine(OpBuilder &b, Location loc,
                              llvm::ArrayRef<Value> state, ValueRange lambda,
                              llvm::ArrayRef<Value> summary);
  /// The part of λ that goes back through the combine (μ_A) for live
  /// component `c`.
  Value lambdaThroughCombine(TileBuilder &tb, CombineOp transposed,
                             unsigned c) {
    return backward.carriedFromCombine[c].empty()
               ? tb.zeros(componentShapes[c])
               : transposed.getResult(spec.components.size() + c);
  }
  /// The (batch entry, head, run) slice of a [B, H, R, component] tensor.
  std::tuple<llvm::SmallVector<OpFoldResult>, llvm::SmallVector<OpFoldResult>,
             llvm::SmallVector<OpFoldResult>>
  runPlace(OpBuilder &b, Value bi, Value hi, OpFoldResult r, unsigned c) const {
    llvm::SmallVector<int64_t> shape = {1};
    llvm::append_range(shape, componentShapes[c]);
    llvm::SmallVector<OpFoldResult> at = {r};
    at.append(componentShapes[c].size(), idx(b, 0));
    return pairSlice(b, bi, hi, shape, at);
  }
  RankedTensorType perRunType(unsigned c) const {
    llvm::SmallVector<int64_t> shape = {batch, heads, runs};
    llvm::append_range(shape, componentShapes[c]);
    return RankedTensorType::get(shape, Float32Type::get(op->getContext()));
  }
  /// Pass 1a: every run's total, [B, H, R, component] per component.
  FailureOr<llvm::SmallVector<Value>> emitRunTotals(OpBuilder &b);
  /// Pass 2a: every run's β (the λ its reverse pass from zero hands on),
  /// [B, H, R, component] per live component.
  FailureOr<llvm::SmallVector<Value>>
  emitRunLambdas(OpBuilder &b, llvm::ArrayRef<Value> entryStates);
  /// Pass 3 for the inputs `inputs`: their gradients, every chunk in
  /// parallel, from the saved states and λ (`lambdas`).
  FailureOr<llvm::SmallVector<Value>>
  emitGradientPass(OpBuilder &b, llvm::ArrayRef<unsigned> inputs,
                   llvm::ArrayRef<Value> entryStates, ValueRange lambdas);
  /// The gradient of the per-head decay rates (`head_params`), [H]: a
  /// pass parallel over (batch entry, head, chunk) reverse-differentiates
  /// each chunk's forward program (ReverseDiff.h) — its readouts and the
  /// state it carries out, from the saved state entering it — with
  /// respect to its head's log γ, seeded with the readouts' cotangent and
  /// λ; the chunks' sums, divided by γ, are the rates' gradient.
  FailureOr<Value> emitDecayGradientPass(OpBuilder &b,
                                         llvm::ArrayRef<Value> entryStates,
                                         ValueRange lambdas);

  PrefixVjpOp op;
  const MonoidSpec &spec;
  int64_t chunk;
  bool parallelGradients;
  int64_t valueTile, parallelism;
  bool splitGradients;
  /// The target rounds products' operands to bf16 (16-bit ops; see
  /// emitDecayGradientPass).
  bool bf16Products;
  /// Runs asked for (0 or 1: none).
  int64_t segments;
  /// Runs of `perRun` chunks per (batch entry, head) (the last perhaps
  /// fewer), and the chunk slots of a stack: runs × perRun.
  int64_t runs = 1, perRun = 0, stackChunks = 0;
  /// The run of the pass being built (null: all chunks).
  Value runIndex;
  /// 0, 1, ... for every input.
  llvm::SmallVector<unsigned> allInputs;
  const ChunkPlan &forward;
  const ChunkVjpPlan &backward;
  /// The current pass's masks, built where `maskBuilder` points.
  std::unique_ptr<DecayTiles> decay;
  std::unique_ptr<OpBuilder> maskBuilder;
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

} // namespace mlir::hla::chunk

#endif // HLA_LIB_DIALECT_HLA_TRANSFORMS_CHUNKBACKWARD_H
