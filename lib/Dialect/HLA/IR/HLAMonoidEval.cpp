//===- HLAMonoidEval.cpp - Numeric evaluation of monoids ---------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/HLAMonoidEval.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>

using namespace mlir;
using namespace mlir::hla;

//===----------------------------------------------------------------------===//
// DenseMatrix
//===----------------------------------------------------------------------===//

DenseMatrix DenseMatrix::identity(int64_t n) {
  DenseMatrix m(n, n);
  for (int64_t i = 0; i < n; ++i)
    m.at(i, i) = 1.0;
  return m;
}

DenseMatrix DenseMatrix::transposed() const {
  DenseMatrix t(cols, rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t.at(c, r) = at(r, c);
  return t;
}

DenseMatrix DenseMatrix::operator*(const DenseMatrix &other) const {
  // A 1 x 1 operand is a scalar and commutes (the monoid's convention).
  if (rows == 1 && cols == 1)
    return other.scaled(data[0]);
  if (other.rows == 1 && other.cols == 1)
    return scaled(other.data[0]);
  DenseMatrix result(rows, other.cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      double lhs = at(r, k);
      for (int64_t c = 0; c < other.cols; ++c)
        result.at(r, c) += lhs * other.at(k, c);
    }
  return result;
}

DenseMatrix &DenseMatrix::operator+=(const DenseMatrix &other) {
  // Shapes must agree; a mismatch is a bug in the caller.
  if (other.data.size() != data.size())
    llvm::report_fatal_error(
        "DenseMatrix: adding matrices of different shapes");
  for (size_t i = 0; i < data.size(); ++i)
    data[i] += other.data[i];
  return *this;
}

DenseMatrix DenseMatrix::scaled(double factor) const {
  DenseMatrix result = *this;
  for (double &x : result.data)
    x *= factor;
  return result;
}

double DenseMatrix::norm() const {
  double sum = 0.0;
  for (double x : data)
    sum += x * x;
  return std::sqrt(sum);
}

//===----------------------------------------------------------------------===//
// MonoidEvaluator
//===----------------------------------------------------------------------===//

MonoidEvaluator::MonoidEvaluator(const MonoidSpec &spec,
                                 const llvm::StringMap<int64_t> &sizes,
                                 int64_t defaultSize)
    : spec(spec), sizes(sizes), defaultSize(defaultSize) {}

std::pair<int64_t, int64_t>
MonoidEvaluator::getShape(const MonoidSlot &slot) const {
  auto size = [&](const std::string &symbol) {
    auto it = sizes.find(symbol);
    return it == sizes.end() ? defaultSize : it->second;
  };
  switch (slot.getRank()) {
  case 0:
    return {1, 1};
  case 1:
    return {size(slot.shape[0]), 1};
  default:
    return {size(slot.shape[0]), size(slot.shape[1])};
  }
}

llvm::SmallVector<DenseMatrix>
MonoidEvaluator::randomInputs(std::mt19937_64 &rng, double scale) const {
  // Inputs under diag(exp(.)) are log-decays: keep them negative so that a
  // product of many tokens stays bounded, as the gate of KDA does.
  llvm::SmallVector<bool> isLogDecay(spec.inputs.size(), false);
  auto mark = [&](const MonoidExpr &expr) {
    for (const MonoidTerm &term : expr)
      for (const MonoidFactor &f : term.factors)
        if (f.kind == MonoidFactor::Kind::DiagExp)
          isLogDecay[f.index] = true;
  };
  for (const MonoidExpr &expr : spec.token)
    mark(expr);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.05, 0.5);
  llvm::SmallVector<DenseMatrix> result;
  for (auto [i, slot] : llvm::enumerate(spec.inputs)) {
    auto [rows, cols] = getShape(slot);
    DenseMatrix m(rows, cols);
    for (double &x : m.data)
      x = isLogDecay[i] ? -uniform(rng) : scale * normal(rng);
    // A scalar input (a gate such as KDA's beta) lives in (0, 1).
    if (slot.getRank() == 0 && !isLogDecay[i])
      m.data[0] = uniform(rng) + 0.25;
    result.push_back(std::move(m));
  }
  return result;
}

MonoidValue MonoidEvaluator::identity() const {
  MonoidValue value;
  for (const MonoidSlot &slot : spec.components) {
    auto [rows, cols] = getShape(slot);
    value.push_back(slot.eyeIdentity ? DenseMatrix::identity(rows)
                                     : DenseMatrix(rows, cols));
  }
  return value;
}

DenseMatrix MonoidEvaluator::evaluate(const MonoidExpr &expr,
                                      const MonoidSlot *target,
                                      llvm::ArrayRef<DenseMatrix> inputs,
                                      const MonoidValue *a,
                                      const MonoidValue *b) const {
  std::optional<DenseMatrix> sum;
  for (const MonoidTerm &term : expr) {
    DenseMatrix product(1, 1, term.negated ? -1.0 : 1.0);
    for (const MonoidFactor &f : term.factors) {
      DenseMatrix factor;
      switch (f.kind) {
      case MonoidFactor::Kind::Param:
        factor = DenseMatrix(1, 1,
                             spec.params[f.index].perHead
                                 ? kPerHeadSample
                                 : spec.params[f.index].value);
        break;
      case MonoidFactor::Kind::Input:
        factor = inputs[f.index];
        break;
      case MonoidFactor::Kind::Diag:
      case MonoidFactor::Kind::DiagExp: {
        const DenseMatrix &x = inputs[f.index];
        factor = DenseMatrix(x.rows, x.rows);
        for (int64_t i = 0; i < x.rows; ++i)
          factor.at(i, i) = f.kind == MonoidFactor::Kind::DiagExp
                                ? std::exp(x.data[i])
                                : x.data[i];
        break;
      }
      case MonoidFactor::Kind::Component: {
        const MonoidValue *side = f.side == MonoidSide::B ? b : a;
        factor = (*side)[f.index];
        break;
      }
      }
      if (f.transposed)
        factor = factor.transposed();
      product = product * factor;
    }
    if (!sum)
      sum = std::move(product);
    else
      *sum += product;
  }
  if (sum)
    return *sum;
  // The empty sum: zero of the target's shape.
  auto [rows, cols] = target ? getShape(*target) : std::make_pair(1l, 1l);
  return DenseMatrix(rows, cols);
}

MonoidValue MonoidEvaluator::token(llvm::ArrayRef<DenseMatrix> inputs) const {
  MonoidValue value;
  for (auto [i, slot] : llvm::enumerate(spec.components))
    value.push_back(evaluate(spec.token[i], &slot, inputs, nullptr, nullptr));
  return value;
}

MonoidValue MonoidEvaluator::combine(const MonoidValue &a,
                                     const MonoidValue &b) const {
  MonoidValue value;
  for (auto [i, slot] : llvm::enumerate(spec.components))
    value.push_back(evaluate(spec.combine[i], &slot, {}, &a, &b));
  return value;
}

DenseMatrix MonoidEvaluator::readout(const MonoidReadout &readout,
                                     llvm::ArrayRef<DenseMatrix> inputs,
                                     const MonoidValue &state) const {
  return evaluate(readout.expr, nullptr, inputs, &state, &state);
}
