//===- HLAMonoidEval.h - Numeric evaluation of monoids ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Evaluates a MonoidSpec's rules on concrete double-precision matrices, for
// checking a monoid's laws (hla-verify-algebra) and for unit tests. It is a
// direct interpreter of the rules, deliberately simple: the code generators
// never use it.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAMONOIDEVAL_H
#define HLA_DIALECT_HLA_IR_HLAMONOIDEVAL_H

#include "hla/Dialect/HLA/IR/HLAMonoid.h"

#include <random>
#include <vector>

namespace mlir::hla {

/// A small dense row-major matrix of doubles. Vectors are n x 1 columns and
/// scalars 1 x 1, matching the monoid's matrix-chain conventions.
struct DenseMatrix {
  int64_t rows = 1, cols = 1;
  std::vector<double> data = {0.0};

  DenseMatrix() = default;
  DenseMatrix(int64_t rows, int64_t cols, double fill = 0.0)
      : rows(rows), cols(cols), data(rows * cols, fill) {}

  double &at(int64_t r, int64_t c) { return data[r * cols + c]; }
  double at(int64_t r, int64_t c) const { return data[r * cols + c]; }

  static DenseMatrix identity(int64_t n);
  DenseMatrix transposed() const;
  DenseMatrix operator*(const DenseMatrix &other) const;
  DenseMatrix &operator+=(const DenseMatrix &other);
  DenseMatrix scaled(double factor) const;
  /// Frobenius norm.
  double norm() const;
};

/// One value per state component, in component order.
using MonoidValue = llvm::SmallVector<DenseMatrix, 8>;

/// The value a per-head parameter (MonoidParam::perHead) takes when a
/// monoid is evaluated without heads (the algebra checks): a decay rate
/// strictly between 0 and 1, so that no term it scales vanishes or folds.
constexpr double kPerHeadSample = 0.875;

/// Interprets a monoid's rules with every shape symbol bound to a size.
class MonoidEvaluator {
public:
  /// `sizes` binds every symbol the monoid uses; unbound symbols get
  /// `defaultSize`.
  MonoidEvaluator(const MonoidSpec &spec, const llvm::StringMap<int64_t> &sizes,
                  int64_t defaultSize = 3);

  const MonoidSpec &getSpec() const { return spec; }

  /// The concrete (rows, cols) of a slot.
  std::pair<int64_t, int64_t> getShape(const MonoidSlot &slot) const;

  /// Random token inputs (standard normal, scaled by `scale`); inputs that
  /// feed diag(exp(.)) are drawn negative so the exponential decays.
  llvm::SmallVector<DenseMatrix> randomInputs(std::mt19937_64 &rng,
                                              double scale) const;

  MonoidValue identity() const;
  MonoidValue token(llvm::ArrayRef<DenseMatrix> inputs) const;
  MonoidValue combine(const MonoidValue &a, const MonoidValue &b) const;
  /// Evaluates readout `name` of `state` (full component list) for token
  /// inputs `inputs` (the query side).
  DenseMatrix readout(const MonoidReadout &readout,
                      llvm::ArrayRef<DenseMatrix> inputs,
                      const MonoidValue &state) const;

  /// Evaluates any rule: side-B components read `b`, the others `a`; an
  /// empty rule is the zero of `target`'s shape.
  DenseMatrix evaluate(const MonoidExpr &expr, const MonoidSlot *target,
                       llvm::ArrayRef<DenseMatrix> inputs, const MonoidValue *a,
                       const MonoidValue *b) const;

private:
  MonoidSpec spec;
  llvm::StringMap<int64_t> sizes;
  int64_t defaultSize;
};

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_IR_HLAMONOIDEVAL_H
