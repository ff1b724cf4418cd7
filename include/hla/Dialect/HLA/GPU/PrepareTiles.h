//===- PrepareTiles.h - A chunk loop in the forms tiles place --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-lower-register-tiles tries each loop on a copy, rewritten first
// by these into forms its placement takes; the phase mapping keeps the
// loop as it was where the copy cannot be placed. Each computes the same
// values as the ops it replaces.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_GPU_PREPARETILES_H
#define HLA_DIALECT_HLA_GPU_PREPARETILES_H

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::hla::gpumap {

/// Rewrites the tiles in blocks of `forall`'s body (rank 3 [a, b, c] and
/// rank 4 [a, b, c, e], KDA's derived backward's) into the 2-D tiles they
/// view ([a·b, c], [a·b, c·e]): reshapes between the two vanish, a generic
/// over blocks iterates over the 2-D tile's rows and columns instead.
/// Returns false, changing nothing, where some op reading or making a
/// blocked tile cannot be rewritten so.
bool flattenBlockedTiles(scf::ForallOp forall);

/// Rewrites each vector inserted as one row of a tile (the cotangent of a
/// row read: KDA's Γ at a chunk's last token) into an elementwise select
/// of the vector and the tile on the row index.
void insertedRowsAsSelects(scf::ForallOp forall);

/// Splits each elementwise generic with several results (elementwise
/// fusion keeps a producer's result where others read it) into one generic
/// per result, each computing what its result needs.
void splitElementwiseResults(scf::ForallOp forall);

/// All three, in that order.
void prepareForRegisterTiles(scf::ForallOp forall);

} // namespace mlir::hla::gpumap

#endif // HLA_DIALECT_HLA_GPU_PREPARETILES_H
