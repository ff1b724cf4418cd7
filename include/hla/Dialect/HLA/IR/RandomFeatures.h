//===- RandomFeatures.h - LinSimp's seeded feature matrix --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The random feature matrix Ω [m, d] of LinSimp's favor kernel
// (SEMANTICS.md §5, docs/RandomFeatures.md): ⌈m/d⌉ orthogonal d x d blocks
// from seeded Gaussian matrices (QR with a positive diagonal of R, i.e. the
// sign fix), the first m rows, each scaled by the norm of an independent
// Gaussian d-vector. python/hla/random_features.py computes the same
// matrix with the same operations in the same order, bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_RANDOMFEATURES_H
#define HLA_DIALECT_HLA_IR_RANDOMFEATURES_H

#include <cstdint>
#include <vector>

namespace mlir::hla {

/// Ω [m, d] row-major for `seed`; m, d >= 1.
std::vector<double> generateRandomFeatures(int64_t m, int64_t d,
                                           uint64_t seed);

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_IR_RANDOMFEATURES_H
