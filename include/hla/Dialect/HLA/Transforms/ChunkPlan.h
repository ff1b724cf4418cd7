//===- ChunkPlan.h - Intra-chunk forms derived from a monoid ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Derives, from a monoid description, what one chunk of c tokens contributes:
//
//   * the chunk summary Σ_x of every component x (the fold of its tokens),
//   * every readout at every position t of the chunk, given the state X₀
//     carried into the chunk: readout(X₀ ∘ P(t)), P(t) the chunk's inclusive
//     prefix.
//
// Both are written as sums of *index terms*: a coefficient, a tree of token
// index variables (each bounded by its parent, strictly or not, the root
// being t or the chunk's last token E), a matrix chain of token inputs at
// those indices and carried components, and a decay γ^(linear form in the
// indices). The terms come from unrolling the combine rule one token at a
// time (P(t) = P(t−1) ∘ token(t)), which is exact for monoids whose
// components update as  x = γ^w x.a + (terms without x.a)  with scalar decay
// components ρ (identity 1, token γ, rule ρ.a ρ.b). Terms that differ only in
// "i < s" versus "i = s" are merged into "i ≤ s".
//
// Each term is then a small tensor network over the chunk's token indices:
// its chain splits into pieces at the 1x1 boundaries (q_tᵀ k_i is a scalar
// per (t, i): a Gram matrix), the index tree gives (decayed) triangular masks
// between indices, and summing out the internal indices is a sequence of
// c x c matrix products: the masked-matmul chunked form. The emitter in
// Chunk.cpp turns a plan into linalg ops; a test pass evaluates plans
// numerically against the monoid itself.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_TRANSFORMS_CHUNKPLAN_H
#define HLA_DIALECT_HLA_TRANSFORMS_CHUNKPLAN_H

#include "hla/Dialect/HLA/IR/HLAMonoid.h"

#include <string>
#include <vector>

namespace mlir::hla::chunk {

/// A token index variable of a term: it ranges over positions <= (or <, when
/// strict) its parent's. Variable 0 is the root: the readout position t, or
/// the chunk's last token E for summaries.
///
/// Backward terms (ChunkVjp.h) are rooted at the token whose gradient they
/// give, so some of their variables run over *later* positions: >= (or >)
/// their parent's, and one may be pinned to the chunk's last token E.
struct IndexVar {
  int parent = -1;
  bool strict = false;
  /// Ranges over positions >= (or >) the parent's instead of <= (<).
  bool later = false;
  /// Fixed at the chunk's last position (a summary's former root).
  bool atEnd = false;
};

/// One factor of a term's matrix chain.
struct ChainFactor {
  enum class Kind { Token, Carried };
  Kind kind = Kind::Token;
  /// Monoid input (Token) or component (Carried) index.
  unsigned slot = 0;
  /// The index variable a token factor is read at.
  int var = -1;
  bool transposed = false;

  bool operator==(const ChainFactor &o) const {
    return kind == o.kind && slot == o.slot && var == o.var &&
           transposed == o.transposed;
  }
};

/// One index term: coeff · γ^(Σ decay[v]·v + decayConst) · Π chain, summed
/// over all index values allowed by the variable tree.
struct IndexTerm {
  double coeff = 1.0;
  std::vector<IndexVar> vars;
  std::vector<ChainFactor> chain;
  /// Exponent of γ: per-variable coefficients and a constant.
  std::vector<double> decay;
  double decayConst = 0.0;

  int addVar(int parent, bool strict) {
    vars.push_back({parent, strict});
    decay.push_back(0.0);
    return vars.size() - 1;
  }
};

/// What a chunk plan computes for one output.
struct PlannedOutput {
  /// Component (summaries) or readout name.
  std::string name;
  /// For summaries, the component index; for readouts, the readout index.
  unsigned index = 0;
  std::vector<IndexTerm> terms;
};

/// The symbolic chunk plan of a monoid.
struct ChunkPlan {
  /// The decay base γ (1 when the monoid has no decay component).
  double gamma = 1.0;
  /// γ is a per-head parameter (MonoidParam::perHead): the lowering reads
  /// each head's rate at run time, and `gamma` is the sample the plan's
  /// checks evaluate it at (kPerHeadSample). Token rules scaled by γ carry
  /// it as one more power of the decay instead of in their coefficient.
  bool perHeadDecay = false;
  /// Chunk summaries of every component (root: the chunk's last token).
  std::vector<PlannedOutput> summaries;
  /// Every readout at every position (root: the position, which also reads
  /// the query inputs) given the carried-in state.
  std::vector<PlannedOutput> readouts;
};

/// Derives the plan of `spec`, or fails with `error` for monoids outside the
/// supported class (matrix-valued decays such as KDA's transition, rank-2
/// token inputs, components that read themselves non-linearly).
FailureOr<ChunkPlan> buildChunkPlan(const MonoidSpec &spec, std::string &error);

/// Prints a term, e.g. `+1 * sum{v1<=v0, v2<v1} q[v0].T k[v1] k[v1].T q[v2]
/// v[v2].T * g^(...)`, for tests and debugging.
/// Carried factors print as `S0` (the carried-in state); components from
/// `bareFrom` on (a backward's cotangents) print by their name alone.
std::string printTerm(const MonoidSpec &spec, const IndexTerm &term,
                      unsigned bareFrom = ~0u);

//===----------------------------------------------------------------------===//
// Contraction of one term
//===----------------------------------------------------------------------===//

/// A piece of a term's chain between two 1x1 boundaries.
struct ChainPiece {
  enum class Kind {
    Left,   ///< rows x 1: a column, the start of a summary chain.
    Scalar, ///< 1 x 1: x_aᵀ M y_b, a bilinear form between two indices.
    Right,  ///< 1 x cols: a row, the end of the chain.
  };
  Kind kind = Kind::Scalar;
  /// Token variables at the piece's two ends (-1: the end is a constant).
  int firstVar = -1, lastVar = -1;
  /// The factors, in chain order.
  std::vector<ChainFactor> factors;
};

/// Splits a term's chain at its 1x1 boundaries. Scalar token inputs and
/// scalar carried components are returned in `scalars` (they commute).
FailureOr<std::vector<ChainPiece>> splitChain(const MonoidSpec &spec,
                                              const IndexTerm &term,
                                              std::vector<ChainFactor> &scalars,
                                              std::string &error);

/// A non-negative decomposition of a term's decay exponent into factors that
/// are each at most 1 on the chunk: a weight w ≥ 0 on each tree edge,
/// γ^(w (parent − child)) (γ^(w (child − parent)) to a later child), a
/// weight u ≥ 0 per variable from the chunk's start, γ^(u (v + 1)), and a
/// constant.
struct DecayPlan {
  std::vector<double> edge;      ///< per variable (its edge to its parent)
  std::vector<double> fromStart; ///< per variable
  double constant = 0.0;
};

/// Decomposes `term`'s exponent; fails if a weight would have to grow along
/// the chunk (not a decay).
FailureOr<DecayPlan> planDecay(const IndexTerm &term, std::string &error);

} // namespace mlir::hla::chunk

#endif // HLA_DIALECT_HLA_TRANSFORMS_CHUNKPLAN_H
