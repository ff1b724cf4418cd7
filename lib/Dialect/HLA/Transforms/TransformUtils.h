//===- TransformUtils.h - Small helpers shared by hla's passes ---*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_TRANSFORMS_TRANSFORMUTILS_H
#define HLA_LIB_DIALECT_HLA_TRANSFORMS_TRANSFORMUTILS_H

#include "hla/Dialect/HLA/IR/HLAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace mlir::hla {

/// The largest divisor of `n` that is at most `limit` (1 if none is
/// larger): a tile size that splits an extent into equal static tiles.
inline int64_t largestDivisorUpTo(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

/// Whether `inner` is inside an scf.for that `outer` is not: work `outer`
/// does, moved into `inner`, would be done again at every iteration.
inline bool isInLoopOutside(Operation *inner, Operation *outer) {
  for (Operation *parent = inner->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (parent->isAncestor(outer))
      return false;
    if (isa<scf::ForOp>(parent))
      return true;
  }
  return false;
}

/// Whether `op` is a matrix product cuBLAS runs for a model graph: a
/// linalg.matmul or linalg.batch_matmul with the ops' default maps whose
/// operands all have one element type, f32, f16 or bf16.
inline bool isCublasProduct(Operation *op) {
  auto matmul = dyn_cast<linalg::MatmulOp>(op);
  auto batch = dyn_cast<linalg::BatchMatmulOp>(op);
  if ((!matmul && !batch) || (matmul && matmul.hasUserDefinedMaps()) ||
      (batch && batch.hasUserDefinedMaps()))
    return false;
  Type element = getElementTypeOrSelf(op->getOperand(0).getType());
  return (element.isF32() || element.isF16() || element.isBF16()) &&
         llvm::all_of(op->getOperandTypes(), [&](Type t) {
           return getElementTypeOrSelf(t) == element;
         });
}

/// The attention op whose output `func` returns first, or null; the
/// passes that turn such a function into others check the rest.
inline AttentionOpInterface returnedAttentionOp(func::FuncOp func) {
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  Operation *op = ret && ret.getNumOperands() >= 1
                      ? ret.getOperand(0).getDefiningOp()
                      : nullptr;
  return dyn_cast_or_null<AttentionOpInterface>(op);
}

/// What an elementwise linalg.generic of one tensor result yields, as a
/// value `sum` of its body, perhaps through one truncation (bf16 gradient
/// tiles): the shape the tile-sum passes rewrite.
struct ElementwiseYield {
  Value sum;
  Operation *truncation = nullptr;
};

/// `op`'s yield when `op` is such a generic (every loop parallel, its
/// output in the loops' order and never read) and `sum` has no other
/// reader; nothing otherwise.
inline std::optional<ElementwiseYield>
matchElementwiseYield(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op->getNumResults() != 1 ||
      op.getNumDpsInits() != 1 ||
      op.getNumLoops() != op.getNumParallelLoops() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity() ||
      op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)))
    return std::nullopt;
  ElementwiseYield yield{op.getBody()->getTerminator()->getOperand(0)};
  if (auto trunc = yield.sum.getDefiningOp<arith::TruncFOp>()) {
    yield.truncation = trunc;
    yield.sum = trunc.getIn();
  }
  if (!yield.sum.hasOneUse())
    return std::nullopt;
  return yield;
}

} // namespace mlir::hla

#endif // HLA_LIB_DIALECT_HLA_TRANSFORMS_TRANSFORMUTILS_H
