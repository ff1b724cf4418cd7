//===- TileBuilder.h - f32 tile arithmetic as linalg ops --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Small helpers that emit linalg.generic ops on static f32 tensors: the
// vocabulary the chunked lowering writes its per-chunk math in (matrix
// products, masks, row/column scalings, reductions). Every helper returns a
// fresh tensor; nothing is updated in place, so bufferization decides where
// the tiles live.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_TRANSFORMS_TILEBUILDER_H
#define HLA_LIB_DIALECT_HLA_TRANSFORMS_TILEBUILDER_H

#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAMonoid.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::hla {

class TileBuilder {
public:
  TileBuilder(OpBuilder &builder, Location loc)
      : b(builder), loc(loc), f32(builder.getF32Type()) {}

  OpBuilder &getBuilder() { return b; }
  Location getLoc() const { return loc; }

  static llvm::ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  /// A zero-filled f32 tensor.
  Value zeros(llvm::ArrayRef<int64_t> shape);
  /// An uninitialised f32 tensor (every element is written by its user).
  Value empty(llvm::ArrayRef<int64_t> shape);
  /// An f32 scalar constant.
  Value scalar(double value);

  /// A linalg.generic with one result over `init`, body returning the value
  /// to yield from the block arguments (inputs..., output).
  Value
  generic(llvm::ArrayRef<Value> inputs, Value init,
          llvm::ArrayRef<AffineMap> maps,
          llvm::ArrayRef<utils::IteratorType> iterators,
          llvm::function_ref<Value(OpBuilder &, Location, ValueRange)> body);

  /// op(A) · op(B) for [m, k] / [k, n] (transposes take [k, m] / [n, k]).
  Value matmul(Value a, Value b, bool transA = false, bool transB = false);
  /// op(A) · x for a matrix A and vector x.
  Value matvec(Value a, Value x, bool transA = false);
  Value add(Value a, Value b);
  Value mul(Value a, Value b);
  /// a · b + c elementwise (math.fma), all three of one shape.
  Value fma(Value a, Value b, Value c);
  /// a · s for a double s, or for a 0-d tensor s.
  Value scale(Value a, double s);
  Value scaleBy(Value a, Value scalar0d);
  /// diag(u) · A and A · diag(u).
  Value scaleRows(Value a, Value u);
  Value scaleCols(Value a, Value u);
  /// Row-wise dot products of two [m, n] matrices: [m].
  Value dotRows(Value a, Value b);
  /// Σ of a vector, as a 0-d tensor; dot product of two vectors.
  Value sum(Value v);
  Value dot(Value a, Value b);
  /// a ⊗ b: [m] x [n] -> [m, n].
  Value outer(Value a, Value b);
  Value transpose(Value a);
  /// Converts any float tensor to f32 (or from f32 to `type`).
  Value castTo(Value a, Type elementType);

private:
  OpBuilder &b;
  Location loc;
  Type f32;
};

/// Whether `g` is a matrix product C += A·B of rank-2 tiles: what the
/// GPU runs on tensor cores.
bool isMatrixProduct(linalg::GenericOp g);

/// Tensor cores round f32 operands to bf16 (8 bits of precision). Where a
/// product's result is a difference of nearly equal sums (the cotangent of
/// a normalised readout's scores), that rounding is amplified; splitting
/// each f32 operand X into X_hi = bf16(X) and X_lo = X − X_hi, both exact in
/// bf16 to 2^-16 of X, gives A·B = A_lo·B_hi + A_hi·B_lo + A_hi·B_hi with
/// the dropped A_lo·B_lo 2^-16 smaller: three products accumulated in turn
/// (two where one operand is 16-bit already). Replaces `product`; returns
/// the new result. `known`: the parts made so far, each operand's made once
/// right after its definition (a loop's invariants split outside it).
using Bf16Parts = llvm::DenseMap<Value, std::pair<Value, Value>>;
Value splitForBf16Operands(OpBuilder &b, linalg::GenericOp product,
                           Bf16Parts &known);
/// Every matrix product nested in `roots`, split so.
void splitMatrixProducts(OpBuilder &b, llvm::ArrayRef<Operation *> roots,
                         Bf16Parts &known);

/// The monoid's identity for component `c`, shaped like `type` (zeros, or
/// the identity matrix / 1 for components marked `eye`).
Value buildMonoidIdentity(OpBuilder &b, Location loc, const MonoidSpec &spec,
                          unsigned c, RankedTensorType type);

/// hla.combine(lhs, rhs) restricted to the carried components: `lhsCarried`
/// holds only those (the others are given uninitialised tensors, which no
/// carried result reads), `rhsFull` every component, of `fullTypes`.
llvm::SmallVector<Value> combineCarried(OpBuilder &b, Location loc,
                                        MonoidAttr monoid,
                                        ValueRange lhsCarried,
                                        ValueRange rhsFull,
                                        llvm::ArrayRef<Type> fullTypes);

} // namespace mlir::hla

#endif // HLA_LIB_DIALECT_HLA_TRANSFORMS_TILEBUILDER_H
