//===- ReverseDiff.h - Reverse differentiation of tile programs -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The vector-Jacobian product of a straight-line program of tensor ops, as
// more tensor ops: what the backward of a chunk whose forward has no index
// plan (the gated delta rule's WY/UT form) is derived from. See
// ReverseDiff.cpp for the rules.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_TRANSFORMS_REVERSEDIFF_H
#define HLA_DIALECT_HLA_TRANSFORMS_REVERSEDIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include <functional>

namespace mlir::hla {

/// The top-level ops inserted into `b`'s block since the builder was at
/// `mark` (the op before its insertion point then, null at the block's
/// start), in order.
class OpRecorder {
public:
  explicit OpRecorder(OpBuilder &b);
  /// The ops inserted since construction.
  llvm::SmallVector<Operation *> recorded() const;

private:
  OpBuilder &b;
  Block *block;
  Operation *mark;
};

/// A part of a program whose vector-Jacobian product is known in closed
/// form, cheaper than reversing its ops (the triangular solve by doubling:
/// N = (I + L)^-1, L's cotangent −Nᵀ dN Nᵀ, two products against about four
/// per level and every level's tiles kept): `ops` (of the program, in any
/// order) compute `result` from `input` and values that do not depend on
/// the differentiated ones; no op outside `ops` reads their results but
/// `result`.
struct ClosedFormVjp {
  Value input, result;
  llvm::SmallVector<Operation *> ops;
  /// Emits `input`'s cotangent given `result`'s.
  std::function<Value(OpBuilder &, Location, Value)> vjp;
};

/// Emits at `b`'s insertion point the vector-Jacobian product of `program`
/// (ops of one block, in order): given the cotangents `seeds` (pairs of a
/// result of `program` and its cotangent, of the same type), returns the
/// cotangent of each of `wrt` (values `program` reads; zeros where nothing
/// reaches them). Only what depends on `wrt` is differentiated. Ops:
/// linalg.generic with f32 tensors and one result (its body's float ops
/// differentiated symbolically; an output read only as an accumulator
/// summed into), linalg.fill, tensor.empty, tensor.extract_slice,
/// tensor.insert_slice, tensor.expand_shape, tensor.collapse_shape,
/// arith.constant. Anything else on the path from
/// `wrt` to a seed is an error at that op. The parts `closedForms` cover
/// are differentiated by their rules instead of op by op.
FailureOr<llvm::SmallVector<Value>>
emitReverseDiff(OpBuilder &b, Location loc, llvm::ArrayRef<Operation *> program,
                llvm::ArrayRef<std::pair<Value, Value>> seeds,
                llvm::ArrayRef<Value> wrt,
                llvm::ArrayRef<ClosedFormVjp> closedForms = {});

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_TRANSFORMS_REVERSEDIFF_H
