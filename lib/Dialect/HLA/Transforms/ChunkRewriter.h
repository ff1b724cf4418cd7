//===- ChunkRewriter.h - The chunk rewriter shared by its parts -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-chunk rewrites `segment -> inclusive scan -> readout` under a monoid
// into loops over chunks of c tokens. The rewriter is one class whose parts
// live in one file each:
//
//   ChunkRewriter.cpp      shapes, packed sequences, token tiles, the carry
//                          and the chunk loop, causal isolation;
//   ChunkForms.cpp         the three forms (phased, fused, segmented);
//   ChunkTerms.cpp         index terms as masked matrix products on tiles;
//   ChunkDeltaRule.cpp     the gated delta rule's family (WY/UT form);
//   ChunkAnchorWindow.cpp  LinSimp's anchor-window family;
//   ChunkPass.cpp          the pass: matching chains, choosing the family
//                          and the form.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_TRANSFORMS_CHUNKREWRITER_H
#define HLA_LIB_DIALECT_HLA_TRANSFORMS_CHUNKREWRITER_H

#include "TileBuilder.h"

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"
#include "hla/Dialect/HLA/Transforms/ChunkPlan.h"
#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <map>
#include <memory>

namespace mlir::hla::chunk {

struct ChunkTiles;

/// The decay tiles of a plan (decay-weighted triangular masks and
/// from-start weights). With a constant rate γ they are built once before
/// the chunk loops, at the hoisting builder; with a rate per head
/// (ChunkPlan::perHeadDecay) each is built where it is first asked for in
/// a block, from the chunk's log γ (ChunkTiles::logDecay), which it reads
/// as an operand (so that reverse differentiation sees it).
class DecayTiles {
public:
  DecayTiles(OpBuilder &hoist, Location loc, int64_t chunk, double gamma,
             bool perHead = false)
      : tb(hoist, loc), chunk(chunk), logGamma(std::log(gamma)),
        perHead(perHead) {}

  /// M[p][v] = γ^{w (p − v)} for v ≤ p (v < p when strict), else 0. With
  /// `repeat` > 1 the rows are those of `repeat` stacked copies of the
  /// chunk (row ρ is position ρ mod c): [repeat · c, c].
  Value mask(TileBuilder &here, const ChunkTiles &tiles, double w, bool strict,
             int64_t repeat = 1);
  /// u[v] = γ^{w (v + 1)}; stacked `repeat` times as `mask`'s rows.
  Value fromStart(TileBuilder &here, const ChunkTiles &tiles, double w,
                  int64_t repeat = 1);
  /// e[v] = γ^{w (E − v)} for v ≤ E (v < E when strict), E the chunk's last
  /// token.
  Value endWeights(TileBuilder &here, const ChunkTiles &tiles, double w,
                   bool strict);
  /// γ^{w · length} as a 0-d tensor.
  Value lengthWeight(TileBuilder &here, const ChunkTiles &tiles, double w);
  /// A term's constant decay γ^c: folded into its coefficient (the returned
  /// factor) when γ is constant; a 0-d tensor in `scalar` when per head.
  double constantFactor(TileBuilder &here, const ChunkTiles &tiles, double c,
                        Value &scalar);
  /// exp(rate · n) for an index n.
  static Value decayOf(OpBuilder &b, Location l, Value n, double rate);
  /// The chunk position of stacked row `row` (itself when `repeat` is 1).
  Value positionOf(OpBuilder &b, Location l, Value row, int64_t repeat) const;
  /// log γ of `head` from the per-head rates `rates` ([H] f32), as a 0-d
  /// f32 tensor (ChunkTiles::logDecay).
  static Value loadLogDecay(OpBuilder &b, Location loc, Value rates,
                            Value head);

  bool isPerHead() const { return perHead; }

private:
  /// A generic over `shape` whose body computes γ^{w · n(indices)} (or 0)
  /// from `weight(nb, l, indices, exp)`; per head, it reads log γ as an
  /// operand.
  Value
  build(TileBuilder &at, const ChunkTiles &tiles, llvm::ArrayRef<int64_t> shape,
        llvm::function_ref<Value(OpBuilder &, Location,
                                 llvm::function_ref<Value(Value, double)>)>
            body);
  /// The tile `key` of this lowering (constant rate) or of this chunk's
  /// log rate (per head), made by `make` at the builder it is given if
  /// there is none yet.
  Value tile(TileBuilder &here, const ChunkTiles &tiles, const std::string &key,
             llvm::function_ref<Value(TileBuilder &)> make);

  TileBuilder tb;
  int64_t chunk;
  double logGamma;
  bool perHead;
  /// Built tiles by (the chunk's log rate per head, else null; key).
  std::map<std::pair<void *, std::string>, Value> built;
};

/// Everything a term needs inside the chunk loop.
struct ChunkTiles {
  int64_t chunk = 0;
  /// Per monoid input: the chunk's tile [c, n] (or [c] for scalars), f32.
  llvm::SmallVector<Value> tokens;
  /// Per component: the carried-in state (phase 3), f32, or null.
  llvm::SmallVector<Value> carried;
  /// The chunk's number of valid tokens (index).
  Value length;
  /// Batch entry, first token and query head of the chunk (index).
  Value batch, start, head;
  /// Readout rows stack this many copies of the chunk's positions (row ρ
  /// is position ρ mod c): LinSimp reads several anchor offsets of each
  /// query out in one pass. Only readout inputs are stacked; masks and
  /// weights on the readout index are stacked to match.
  int64_t readoutRepeat = 1;
  /// The chunk's sequence (its row of per-sequence states) and that
  /// sequence's first token; null: the batch entry and token 0.
  Value sequence, sequenceStart;
  /// log γ of the chunk's head (a 0-d f32 tensor) when the decay's rate is
  /// per head (DecayTiles); null otherwise.
  Value logDecay;
};

/// Emits index terms as linalg ops on chunk tiles; failures are reported at
/// `anchor`.
class TermEmitter {
public:
  TermEmitter(TileBuilder &tb, const MonoidSpec &spec, const ChunkTiles &tiles,
              DecayTiles &decay, Operation *anchor)
      : tb(tb), spec(spec), tiles(tiles), decay(decay), anchor(anchor) {}

  /// The value of a summary term (component shape) or a readout term
  /// ([c, n] or [c]); for a readout term that ends in a product with a
  /// right factor [c, n], the two factors instead (value = left · right),
  /// so that terms sharing their right factor (hla2's (QKᵀ ⊙ L)·V and
  /// ((QS₀Qᵀ) ⊙ L)·V) are summed before one product.
  struct TermValue {
    TermValue(Value value) : value(value) {}
    TermValue(Value left, Value right) : left(left), right(right) {}
    Value value;
    Value left, right;
  };
  FailureOr<TermValue> emit(const IndexTerm &term, bool isSummary);

private:
  Value tokenTile(const ChainFactor &f) { return tiles.tokens[f.slot]; }
  Value carriedTile(const ChainFactor &f) { return tiles.carried[f.slot]; }
  TileBuilder &tb;
  const MonoidSpec &spec;
  const ChunkTiles &tiles;
  DecayTiles &decay;
  Operation *anchor;
};

/// The sum of `terms` (a summary's, of shape `shape`, or readout rows);
/// terms that end in the same right factor share one product with it.
FailureOr<Value> emitTermSum(TileBuilder &tb, const MonoidSpec &spec,
                             const ChunkTiles &tiles, DecayTiles &decay,
                             Operation *anchor, llvm::ArrayRef<IndexTerm> terms,
                             bool isSummary, llvm::ArrayRef<int64_t> shape);

/// Every component's chunk summary (decay components: γ^length).
FailureOr<llvm::SmallVector<Value>>
emitChunkSummaries(OpBuilder &b, Location loc, const MonoidSpec &spec,
                   const ChunkPlan &plan, const ChunkTiles &tiles,
                   DecayTiles &decay, Operation *anchor,
                   llvm::ArrayRef<llvm::SmallVector<int64_t>> componentShapes);

/// Static sizes of a matched segment -> scan -> readout chain. The readout
/// is an hla.readout or LinSimp's hla.anchor_readout (`anchor`).
struct ChainInfo {
  MonoidAttr monoid;
  SegmentOp segment;
  /// The chain's scan (null for `segment -> total`).
  ScanOp scan;
  /// The chain's readout, or the hla.total of a `segment -> total` chain
  /// (where new ops go and errors are reported).
  Operation *readout = nullptr;
  AnchorReadoutOp anchor;
  TotalOp total;
  int64_t batch = 0, length = 0, heads = 0;

  RankedTensorType outputType() const {
    return cast<RankedTensorType>(readout->getResult(0).getType());
  }
};

inline OpFoldResult idx(OpBuilder &b, int64_t v) { return b.getIndexAttr(v); }

/// The symbol of the value dimension (the readout's columns) when every
/// term of the monoid's rules reads at most one slot with value columns and
/// keeps them, so that value tiles can be computed apart; else nullopt.
std::optional<std::string> separableValueSymbol(const MonoidSpec &spec);

/// Rows [start, start + length) of a [B, T, H, width] (or [B, T, H])
/// operand at `offsets` (batch, start, head[, first column]), zero-padded
/// to `chunk` rows, as f32.
Value loadChunkRows(OpBuilder &b, Location loc, Value operand,
                    llvm::ArrayRef<OpFoldResult> offsets, Value length,
                    int64_t chunk, int64_t width);

/// Lowers hla.prefix_vjp to loops over chunks of `chunk` tokens
/// (ChunkBackward.cpp); with `parallelGradients`, the tokens' gradients in
/// a pass parallel over chunks of their own. `valueTile` cuts the passes
/// over chunks that keep value columns apart (pass 1, and pass 2 with
/// parallel gradients) into tiles of that many columns (0: whole rows; -1:
/// the most tiles of >= 16 columns that fit one wave of `parallelism`,
/// where the monoid allows them). `splitGradients`: with parallel
/// gradients, a pass per input's gradient. `segments` > 1: the passes
/// over chunks in that many runs per sequence (see ChunkBackward.cpp).
/// `bf16Products`: the target rounds products' operands to bf16 where the
/// op's inputs are 16-bit (hla-chunk's bf16-products).
LogicalResult lowerPrefixVjp(PrefixVjpOp op, int64_t chunk,
                             bool parallelGradients, int64_t valueTile,
                             int64_t parallelism, bool splitGradients,
                             int64_t segments, bool bf16Products);

/// Lowers hla.prefix_vjp under the gated delta rule (ChunkDeltaRuleVjp.cpp):
/// two passes over chunks of `chunk` tokens, the chunk's WY/UT form
/// differentiated in reverse; with `parallelGradients`, the tokens'
/// gradients in a third pass parallel over chunks.
LogicalResult lowerDeltaRuleVjp(PrefixVjpOp op, int64_t chunk,
                                bool parallelGradients);

/// Whether `spec` is the gated delta rule (SEMANTICS.md §6) under any name
/// and parameter values: the library's `kda` rules, slot for slot. Its
/// chunks have their own family (DeltaRuleChunks), which reads the inputs
/// and components by these names.
bool isGatedDeltaRule(const MonoidSpec &spec, MLIRContext *ctx);

/// Appends `decision` to the module's hla.chunking record (what hla-chunk
/// chose for each chain, in order).
void recordChunking(ModuleOp module, llvm::StringRef decision);

/// Reports a chunking failure at `op`, prefixed with the pass name.
inline InFlightDiagnostic chunkError(Operation *op) {
  return op->emitError() << "hla-chunk: ";
}

/// The gated delta rule's chunks (KDA, SEMANTICS.md §6) in the WY/UT form
/// (ChunkDeltaRule.cpp): its matrix-valued transition has no index plan.
/// Used by the forward's loops (ChunkRewriter) and differentiated by the
/// backward's (ChunkDeltaRuleVjp.cpp).
class DeltaRuleChunks {
public:
  /// What `emit` builds of a chunk.
  enum class Part {
    /// The chunk's affine map (A, B): the M and S components.
    Map,
    /// Its output rows read from the state `carried`.
    Rows,
    /// The state after it, from the state `carried` before it.
    NextState,
  };
  /// `f16Gates`: g's operand is f16 (its cumulative sum stays off the
  /// tensor cores, see Γ in ChunkDeltaRule.cpp).
  DeltaRuleChunks(const MonoidSpec &spec, int64_t chunk, bool f16Gates)
      : spec(spec), chunk(chunk), f16Gates(f16Gates) {}

  /// Pairs of tokens in different blocks of 16 as products through the
  /// later block's first token (fewer exponentials); off: every pair's decay
  /// elementwise.
  bool pairBlocks = true;
  /// Every tile read through a projection of its loops (what reverse
  /// differentiation takes): the pair blocks' bands over (block, i, j, d)
  /// of the tiles reshaped to [blocks, 16, ...].
  bool projectionsOnly = false;

  /// `part` of the chunk whose token tiles are `tiles`. The readout and
  /// the summary of one chunk (the same k tile) share their WY/UT tiles.
  FailureOr<llvm::SmallVector<Value>> emit(OpBuilder &b, Location loc,
                                           const ChunkTiles &tiles, Part part,
                                           Value carried = Value());

  /// The triangular solves `emit` built, each with its closed-form
  /// vector-Jacobian product (for emitReverseDiff).
  llvm::ArrayRef<ClosedFormVjp> solves() const { return solveVjps; }

private:
  /// A chunk's cumulative log-decay Γ, e^Γ, W and U (per key tile).
  struct Chunk {
    Value gamma, expGamma, w, u;
    /// The keys scaled from each pair block's first token, one tile per
    /// reference block (`pairs` in ChunkDeltaRule.cpp), read by both A_kk
    /// and A_qk.
    llvm::SmallVector<Value> keysFrom;
    /// U − W S of the state `deltaState` (the rows' and the next state's).
    Value delta, deltaState;
  };
  const MonoidSpec &spec;
  int64_t chunk;
  bool f16Gates;
  llvm::DenseMap<Value, Chunk> chunks;
  llvm::SmallVector<ClosedFormVjp> solveVjps;
};

/// φ(z) = m^-½ exp(Ω z − ‖z‖²/2), z = √scale x, for the rows of the chunk
/// tile `x` [c, d] below `length` (0 for the padding rows); `omega` is the
/// f32 [m, d] feature matrix (ChunkAnchorWindow.cpp).
Value emitKeyFeatures(OpBuilder &b, Location loc, Value x, Value omega,
                      double scale, Value length);

/// LinSimp's anchor window (SEMANTICS.md §5) as tile programs
/// (ChunkAnchorWindow.cpp), shared by the forward's chunk loops
/// (ChunkRewriter::emitAnchorRows) and the backward's, which differentiate
/// them one anchor offset at a time (ChunkAnchorVjp.cpp). Ω is read as an
/// f32 [m, d] tile.
struct AnchorWindow {
  /// W and τ.
  int64_t window = 1;
  double scale = 1.0;
  /// The query heads: an anchor operand with fewer heads is read at head
  /// h / (heads / its heads).
  int64_t heads = 1;

  /// Rows of tokens [start − (W−1), start − (W−1) + rows) of the anchor
  /// operand `operand` (null: the validity, 1 per real token) for a
  /// (batch entry, query head): tokens in [sequenceStart, end) from the
  /// operand, those before the sequence from the initial anchors `init`
  /// (null: 0), the rest 0. f32.
  Value loadRows(OpBuilder &b, Location loc, Value operand, Value init,
                 Value batch, Value head, Value start, Value end, int64_t rows,
                 Value sequence, Value sequenceStart) const;
  /// √τ q: the query side of x, the same for every anchor offset (made
  /// once, outside a loop over offsets).
  Value scaleQueries(TileBuilder &t, Value queries) const;
  /// The anchor side of one pass: x = (√τ q) ⊙ r for scaled query rows
  /// `scaledQueries` (scaleQueries) and anchor rows `anchors` ([rows, d]
  /// each), ‖x‖²/2 per row and x Ωᵀ.
  struct Projection {
    Value halfNorm, projected;
  };
  Projection project(TileBuilder &t, Value scaledQueries, Value anchors,
                     Value omega) const;
  /// F = m^-½ exp(x Ωᵀ − ‖x‖²/2 − shift) [rows, m] for rows whose anchor is
  /// real (`valid` > 0), else 0; no shift when `shift` is null.
  Value features(TileBuilder &t, const Projection &p, Value shift,
                 Value valid) const;
};

/// Lowers hla.anchor_vjp (LinSimp's backward) to a pass over chunks of
/// `chunk` tokens saving the state entering each, then a reverse pass
/// differentiating each chunk (ChunkAnchorVjp.cpp). `bf16Products`: the
/// target rounds products' operands to bf16 where the op's inputs are
/// 16-bit (hla-chunk's bf16-products).
LogicalResult lowerAnchorVjp(AnchorVjpOp op, int64_t chunk, bool bf16Products);

class ChunkRewriter {
public:
  ChunkRewriter(ChainInfo info, int64_t chunk, const ChunkPlan &plan)
      : info(info), spec(info.monoid.getSpec()), chunk(chunk), plan(plan) {}

  /// Features on the anchor side shifted by one running maximum per query
  /// (cancels in LinSimp's joint normalisation; off only to test that).
  bool stableFeatures = true;
  /// LinSimp: the most readout rows of one pass over the anchor window. A
  /// pass reads G anchor offsets of every query of the chunk out at once
  /// (G dividing the window, G · chunk <= anchorRows, at least 1), so its
  /// products have G · chunk rows and the window takes W / G passes.
  int64_t anchorRows = 64;
  /// The gated delta rule (KDA): its matrix-valued transition has no index
  /// plan; chunks are summarised and read out in the WY/UT form instead.
  bool deltaRule = false;
  /// Rows before a chunk's first non-finite token are read out again
  /// without the tokens from there on (see `emitCausalRows`).
  bool causalIsolation = true;
  /// Fused form: the value dimension (the output's columns) cut into tiles
  /// of this width, one (sequence, head, value tile) iteration each; 0 or
  /// the full width: no cut. Exact when each value column of every
  /// component and readout depends only on that column of the value input
  /// (`prepareValueTiles` checks the rules); components without the value
  /// dimension are recomputed per tile.
  int64_t valueTile = 0;

public:
  /// The three-phase form (summaries, scan over chunks, readouts).
  LogicalResult rewritePhased();
  /// One loop over a sequence's chunks per (sequence, head), carrying the
  /// state from chunk to chunk.
  LogicalResult rewriteFused();
  /// The sequence cut into `segments` runs of chunks: one loop per
  /// (batch entry, segment, head) folds each segment's chunks into its
  /// summary, then one loop per (batch entry, segment, head) combines the
  /// summaries of the segments before it and reads its chunks out.
  LogicalResult rewriteSegmented(int64_t segments);
  /// `segment -> total`: one loop per (batch entry, head) folds the
  /// sequence's chunk summaries (every component) from the identity.
  LogicalResult rewriteTotal();

private:
  /// Shapes, chunk counts and the token operands of every input.
  void prepareShapes();
  /// With `valueTile`: checks that the monoid's rules keep value columns
  /// apart and narrows the value dimension of inputs and components.
  LogicalResult prepareValueTiles();
  /// The first value column of the current tile (0 when not cut).
  OpFoldResult valueColumn(OpBuilder &b) const;
  /// Packed: checks at run time, once and ahead of every loop (on the GPU
  /// outside the kernels that use them), that the offsets run from 0 to T
  /// without decreasing. Kernels then build their slot tables unchecked: an
  /// assertion inside a kernel would serialize its wgmma (ptxas C7510) and
  /// a failed one would poison the CUDA context.
  void checkOffsets(OpBuilder &b, Location loc);
  /// The constant tiles (at `hoist`) and, packed, the slot table (at `b`).
  void prepareTiles(OpBuilder &b, OpBuilder &hoist, Location loc);
  /// Builds the slot table of packed sequences: per chunk slot its start
  /// token and length (0 for unused slots), and per sequence the offset of
  /// its first slot (N + 1 entries, the last one the number of used slots).
  /// It trusts the offsets: checkOffsets has run before any loop.
  std::tuple<Value, Value, Value, Value>
  buildChunkTable(OpBuilder &b, Location loc, Value cuSeqlens,
                  int64_t sequences, int64_t slots);
  /// Loads the chunk's tile of token input `input` (zero beyond `length`).
  Value loadTile(OpBuilder &b, Location loc, unsigned input, Value operand,
                 Value batch, Value start, Value length, Value head);
  /// Sequence `si`'s batch entry, first token and length, and its chunk
  /// slots [first slot, end slot); unpacked, the sequence is batch entry
  /// `si` (its first token 0).
  struct SequenceSlots {
    Value batch, first, length, firstSlot, endSlot;
  };
  SequenceSlots sequenceSlots(OpBuilder &b, Location loc, Value si);
  /// (start token, valid length) of chunk slot `n`.
  std::pair<Value, Value> chunkBounds(OpBuilder &b, Location loc, Value n);
  /// The chunk's tile of token input `input` of `tiles`' chunk (its
  /// length, batch entry, start and head): loaded, or for keys under a
  /// feature map their random features, made from the loaded keys.
  Value tokenTile(OpBuilder &b, Location loc, unsigned input,
                  const ChunkTiles &tiles);
  /// Loads the tiles of `inputs` for the chunk at `start`.
  void loadTokens(OpBuilder &b, Location loc, ChunkTiles &tiles, Value batch,
                  Value start, Value head, llvm::ArrayRef<unsigned> inputs);
  /// The token inputs the terms of `outputs` read.
  llvm::SmallVector<unsigned>
  usedInputs(llvm::ArrayRef<PlannedOutput> outputs) const;
  /// Sums the terms of one planned output.
  FailureOr<Value> emitOutput(TileBuilder &tb, const PlannedOutput &out,
                              const ChunkTiles &tiles, bool isSummary,
                              llvm::ArrayRef<int64_t> shape);
  /// Every component's chunk summary (decay components: γ^length).
  FailureOr<llvm::SmallVector<Value>> emitSummaries(OpBuilder &b, Location loc,
                                                    const ChunkTiles &tiles);
  /// The readout rows of the chunk, [c, width] in the output's element
  /// type (rows beyond the chunk's length are garbage).
  FailureOr<Value> emitReadoutRows(OpBuilder &b, Location loc,
                                   const ChunkTiles &tiles);
  /// The readout rows of the chunk with causal isolation: where a token
  /// at chunk position f < length holds a non-finite value, rows [0, f)
  /// come from the chunk read out as f tokens (the later ones zeroed), as
  /// the masked products would otherwise carry 0 · NaN into them; rows from
  /// f on are NaN.
  FailureOr<Value> emitCausalRows(OpBuilder &b, Location loc,
                                  const ChunkTiles &tiles);
  /// The first row of any of the [c, n] or [c] f32 `tiles` holding a
  /// non-finite value, or c when there is none (index).
  Value firstNonFiniteRow(OpBuilder &b, Location loc,
                          llvm::ArrayRef<Value> tiles);
  using DeltaPart = DeltaRuleChunks::Part;
  /// KDA (SEMANTICS.md §6): `part` of a chunk.
  FailureOr<llvm::SmallVector<Value>> emitDeltaRule(OpBuilder &b, Location loc,
                                                    const ChunkTiles &tiles,
                                                    DeltaPart part,
                                                    Value carried = Value());
  /// Made on first use (its chunks' shared tiles live as long as the
  /// rewriter).
  std::optional<DeltaRuleChunks> deltaChunks;
  /// LinSimp: the rows of the chunk, summed over each query's anchor
  /// window (one pass per anchor offset w: the anchors' features F_w, the
  /// monoid's num/den readouts with input F_w, weighted by the anchor
  /// values), then num / den.
  FailureOr<Value> emitAnchorRows(OpBuilder &b, Location loc,
                                  const ChunkTiles &tiles);
  /// LinSimp's window (`info.anchor`'s W and τ).
  AnchorWindow anchorWindow() const;
  /// LinSimp: the last W−1 anchors (r, u, validity) of every sequence.
  llvm::SmallVector<Value> emitFinalAnchors(OpBuilder &b, Location loc);
  /// LinSimp: the feature matrix Ω as f32, converted once where Ω is
  /// defined (so that its products are plain f32 contractions, which the
  /// GPU mappers put on tensor cores for 16-bit ops).
  Value omegaF32(Value omega);
  /// Replaces the readout's results (output, and LinSimp's final anchors)
  /// and erases the chain.
  void finish(OpBuilder &b, Location loc, Value output,
              llvm::ArrayRef<Value> finalStates);
  /// The carried components of the scan's initial state (or the identity)
  /// for `sequence` and `head`.
  llvm::SmallVector<Value> initialCarry(OpBuilder &b, Location loc,
                                        Value sequence, Value head);
  /// An scf.for over chunk slots [lo, hi) of one (batch entry, head),
  /// carrying `carry`: the carried components, or with `allComponents`
  /// every component (combined by the full rule). With `rows` (output rows
  /// of the tokens from `first` on), every chunk is read out with the state
  /// carried into it and its rows are inserted; the loop's last result is
  /// then the rows.
  FailureOr<scf::ForOp>
  emitChunkLoop(OpBuilder &b, Location loc, Value batch, Value head, Value lo,
                Value hi, llvm::ArrayRef<Value> carry, Value rows, Value first,
                bool allComponents, llvm::ArrayRef<unsigned> inputs,
                Value sequence = Value(), Value sequenceStart = Value());
  /// Every component's f32 tensor type (a summary's, a state's).
  llvm::SmallVector<Type> componentTypes(OpBuilder &b) const;
  /// One loop per (batch entry, run, head) folding every component of the
  /// run's chunks [run · perRun, min((run + 1) · perRun, chunks)) from the
  /// identity: its results are [B, runs, H, component] per component.
  FailureOr<scf::ForallOp> emitRunSummaries(OpBuilder &b, Location loc,
                                            int64_t runs, int64_t perRun);
  /// An empty [B, segments, H, component c] tensor (one value per run).
  Value emptyPerRun(OpBuilder &b, Location loc, unsigned c,
                    int64_t segments) const;
  /// Slice [lead..., component c] of a [lead..., shape] tensor.
  Value componentSlice(OpBuilder &b, Location loc, Value tensor, unsigned c,
                       llvm::ArrayRef<OpFoldResult> lead);
  /// Inserts `value` (component c) at [lead...] of `dest` in a forall's
  /// terminator.
  void insertComponent(OpBuilder &b, Location loc, Value value, Value dest,
                       unsigned c, llvm::ArrayRef<OpFoldResult> lead);

  ChainInfo info;
  const MonoidSpec &spec;
  int64_t chunk;
  const ChunkPlan &plan;

  // Set by prepare().
  llvm::SmallVector<unsigned> carried;
  llvm::SmallVector<llvm::SmallVector<int64_t>> componentShapes;
  llvm::SmallVector<Value> operandOfInput;
  llvm::DenseMap<Value, Value> omegaCopies;
  std::unique_ptr<OpBuilder> ownHoist;
  std::unique_ptr<DecayTiles> decay;
  int64_t numChunks = 0;
  int64_t sequences = 0;
  /// Value tiles: per component and input, the dimensions (of its symbolic
  /// shape) that are the value dimension; the width of one tile (the
  /// output's width when not cut), the number of tiles, and the current
  /// tile's first column (set inside the (sequence, head, tile) loop).
  llvm::SmallVector<llvm::SmallVector<unsigned>> componentValueDims;
  llvm::SmallVector<bool> inputIsValue;
  int64_t valueWidth = 0;
  int64_t valueTiles = 1;
  Value valueOffset;
  Value cuSeqlens, slotStart, slotLength, chunkOffsets, slotSequence;
};

} // namespace mlir::hla::chunk

#endif // HLA_LIB_DIALECT_HLA_TRANSFORMS_CHUNKREWRITER_H
