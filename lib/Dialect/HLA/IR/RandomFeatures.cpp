//===- RandomFeatures.cpp - LinSimp's seeded feature matrix -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every step is fixed so that the Python twin (python/hla/random_features.py)
// gets the same bits: a SplitMix64 stream, Box-Muller pairs (both values
// used), Gram-Schmidt with a second projection pass, sums in index order,
// and no fused multiply-adds (the pragma below; Python rounds each
// operation).
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/IR/RandomFeatures.h"

#include <cmath>

#pragma clang fp contract(off)

namespace {

/// Standard normal numbers from a SplitMix64 stream.
class NormalStream {
public:
  explicit NormalStream(uint64_t seed) : state(seed) {}

  double next() {
    if (haveSpare) {
      haveSpare = false;
      return spare;
    }
    // Uniforms in (0, 1): 53 random bits, offset by half a step so that
    // log(u) is finite.
    double u1 = (double(nextBits() >> 11) + 0.5) * 0x1.0p-53;
    double u2 = (double(nextBits() >> 11) + 0.5) * 0x1.0p-53;
    double radius = std::sqrt(-2.0 * std::log(u1));
    double angle = 6.283185307179586 * u2;
    spare = radius * std::sin(angle);
    haveSpare = true;
    return radius * std::cos(angle);
  }

private:
  uint64_t nextBits() {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  uint64_t state;
  double spare = 0;
  bool haveSpare = false;
};

} // namespace

std::vector<double> mlir::hla::generateRandomFeatures(int64_t m, int64_t d,
                                                      uint64_t seed) {
  NormalStream normal(seed);
  std::vector<double> omega(m * d);
  std::vector<double> g(d * d), basis(d * d), column(d);
  int64_t row = 0;
  while (row < m) {
    // G [d, d], row-major.
    for (int64_t i = 0; i < d * d; ++i)
      g[i] = normal.next();
    // Orthonormal columns q_j of G with positive projections r_jj: Q of
    // G = QR with diag(R) > 0. Two Gram-Schmidt passes keep Q orthogonal
    // to rounding for any well-conditioned G.
    for (int64_t j = 0; j < d; ++j) {
      for (int64_t i = 0; i < d; ++i)
        column[i] = g[i * d + j];
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t p = 0; p < j; ++p) {
          double dot = 0;
          for (int64_t i = 0; i < d; ++i)
            dot += basis[p * d + i] * column[i];
          for (int64_t i = 0; i < d; ++i)
            column[i] -= dot * basis[p * d + i];
        }
      double norm = 0;
      for (int64_t i = 0; i < d; ++i)
        norm += column[i] * column[i];
      norm = std::sqrt(norm);
      for (int64_t i = 0; i < d; ++i)
        basis[j * d + i] = column[i] / norm;
    }
    // The rows of Qᵀ are the q_j.
    for (int64_t j = 0; j < d && row < m; ++j, ++row)
      for (int64_t i = 0; i < d; ++i)
        omega[row * d + i] = basis[j * d + i];
  }
  // Row norms distributed like those of Gaussian vectors (chi with d
  // degrees of freedom), independent of the directions.
  for (int64_t r = 0; r < m; ++r) {
    double squares = 0;
    for (int64_t i = 0; i < d; ++i) {
      double x = normal.next();
      squares += x * x;
    }
    double scale = std::sqrt(squares);
    for (int64_t i = 0; i < d; ++i)
      omega[r * d + i] *= scale;
  }
  return omega;
}
