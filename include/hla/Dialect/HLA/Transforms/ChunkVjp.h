//===- ChunkVjp.h - One chunk's backward, from its plan ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The vector-Jacobian product of one chunk, derived symbolically from the
// chunk plan (ChunkPlan.h) and the monoid's combine rule. A chunk reads the
// state X₀ carried into it and its tokens x_0..x_{c−1}; it makes the readouts
// o_r(t) = r(X₀ ∘ P(t), q_t) and the state carried out X₁ = X₀ ∘ Σ, Σ the
// chunk's summary. Given the cotangents g_r(t) of the readouts and λ of X₁,
// the backward of the chunk gives
//
//   μ_A = (∂(A ∘ B)/∂A)ᵀ λ  at A = X₀, B = Σ     (the combine's transpose)
//   μ_B = (∂(A ∘ B)/∂B)ᵀ λ
//   ∂X₀ = μ_A + Σ_t (∂o(t)/∂X₀)ᵀ g(t)
//   ∂x_p = Σ_t (∂o(t)/∂x_p)ᵀ g(t) + (∂Σ/∂x_p)ᵀ μ_B
//
// and a sequence's backward is a reverse scan of ∂X₀ over its chunks (λ of
// chunk c is ∂X₀ of chunk c + 1) plus the token gradients of every chunk,
// which need only the boundary states of both scans.
//
// Each piece is again a sum of index terms or of combine-rule terms: the
// derivative of a matrix chain L·F·R contracted with a cotangent Λ is
// Lᵀ·Λ·Rᵀ (for F transposed, R·Λᵀ·L), and a term differentiated by a token
// factor at index variable v is re-rooted at v, so the variables on the
// path to the former root run over later positions (IndexVar::later).
//
// The cotangents are named in an extended monoid (`vjpSpec`): an input
// `d_<readout>` per readout (the row g_r(t) as a column), and components
// `dout_<x>` (λ) and `dsum_<x>` (μ_B) per component, after the state's.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_TRANSFORMS_CHUNKVJP_H
#define HLA_DIALECT_HLA_TRANSFORMS_CHUNKVJP_H

#include "hla/Dialect/HLA/Transforms/ChunkPlan.h"

namespace mlir::hla::chunk {

struct ChunkVjpPlan {
  /// The monoid with the cotangent slots appended (see above). Component
  /// indices below `numComponents` are the state's.
  MonoidSpec vjpSpec;
  unsigned numInputs = 0, numComponents = 0;
  double gamma = 1.0;
  /// The decay's rate is per head (ChunkPlan::perHeadDecay).
  bool perHeadDecay = false;
  /// Components that depend on the token inputs; only they have
  /// cotangents (a decay ρ = γⁿ is a constant).
  llvm::SmallVector<bool> differentiable;

  /// Per component, μ_A and μ_B as rules over `vjpSpec`: side A is X₀,
  /// side B the chunk summary Σ, side None the cotangents λ (`dout_*`).
  /// Empty where the component gets no cotangent.
  llvm::SmallVector<MonoidExpr> carriedFromCombine, summaryCotangent;

  /// Per carried component y: Σ_t (∂o(t)/∂X₀[y])ᵀ g(t), rooted at the
  /// chunk's last token like a summary. Carried factors are X₀'s.
  std::vector<PlannedOutput> carriedFromReadouts;

  /// Per token input: ∂x_p, rooted at p. Carried factors below
  /// `numComponents` are X₀'s; `dsum_*` factors are μ_B.
  std::vector<PlannedOutput> inputGradients;

  unsigned getOutCotangent(unsigned component) const {
    return numComponents + component;
  }
  unsigned getSummaryCotangent(unsigned component) const {
    return 2 * numComponents + component;
  }
};

/// Derives the backward of one chunk of `spec`, or fails with `error` where
/// the chunk plan does or a gradient would need a trace (a scalar token
/// input read by a matrix-valued term).
FailureOr<ChunkVjpPlan> buildChunkVjpPlan(const MonoidSpec &spec,
                                          std::string &error);

/// Reads the symmetric components (MonoidSpec::isSymmetricComponent) of
/// the chunk summary Σ, and of the carried-in state X₀ where no initial
/// state is given (then X₀ too is built from tokens alone), as stored
/// wherever the plan reads them transposed: the same values, so that Q·S
/// and Q·Sᵀ are one product.
void readSymmetricStatesAsStored(ChunkVjpPlan &plan, const MonoidSpec &spec,
                                 bool initialStateGiven);

/// The monoid whose combine is μ_A and μ_B: its components are the state's,
/// then λ, then μ_B; rule n + y is μ_A of y, rule 2n + y is μ_B of y (λ
/// read from side A). An hla.combine under it transposes the combine.
MonoidSpec transposedCombineMonoid(const ChunkVjpPlan &plan);

} // namespace mlir::hla::chunk

#endif // HLA_DIALECT_HLA_TRANSFORMS_CHUNKVJP_H
