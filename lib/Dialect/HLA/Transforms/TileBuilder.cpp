//===- TileBuilder.cpp - f32 tile arithmetic as linalg ops ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TileBuilder.h"

#include "hla/Dialect/HLA/IR/HLAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mlir::hla;

using utils::IteratorType;

Value TileBuilder::empty(llvm::ArrayRef<int64_t> shape) {
  return tensor::EmptyOp::create(b, loc, shape, f32);
}

Value TileBuilder::scalar(double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value TileBuilder::zeros(llvm::ArrayRef<int64_t> shape) {
  return linalg::FillOp::create(b, loc, scalar(0.0), empty(shape)).getResult(0);
}

Value TileBuilder::generic(
    llvm::ArrayRef<Value> inputs, Value init, llvm::ArrayRef<AffineMap> maps,
    llvm::ArrayRef<IteratorType> iterators,
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, /*doc=*/"", /*libraryCall=*/"",
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args);
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return op.getResult(0);
}

/// The body of a multiply-accumulate reduction. Reassociation lets the
/// reduction be vectorised and split across lanes; contraction lets it use
/// fused multiply-adds. Both change rounding only (f32 results stay within
/// the 1e-5 relative tolerance the tests hold them to).
static Value multiplyAdd(OpBuilder &b, Location loc, ValueRange args) {
  auto flags = arith::FastMathFlagsAttr::get(
      b.getContext(),
      arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  // Narrower operands (a bf16 matrix read in place) are widened to the
  // accumulator's type.
  Type acc = args[2].getType();
  auto widen = [&](Value v) -> Value {
    return v.getType() == acc ? v : arith::ExtFOp::create(b, loc, acc, v);
  };
  Value product =
      arith::MulFOp::create(b, loc, widen(args[0]), widen(args[1]), flags);
  return arith::AddFOp::create(b, loc, args[2], product, flags);
}

Value TileBuilder::matmul(Value a, Value bm, bool transA, bool transB) {
  auto as = shapeOf(a), bs = shapeOf(bm);
  int64_t m = transA ? as[1] : as[0];
  int64_t n = transB ? bs[0] : bs[1];
  MLIRContext *ctx = b.getContext();
  // The loop order follows the layouts, so that the innermost loop walks
  // memory contiguously: (i, k, j) when B is [k, n] (an axpy over rows of B
  // and C), (i, j, k) when B is [n, k] (a dot product over rows of A, B).
  AffineExpr i, j, k;
  if (transB)
    bindDims(ctx, i, j, k);
  else
    bindDims(ctx, i, k, j);
  auto map = [&](AffineExpr x, AffineExpr y) {
    return AffineMap::get(3, 0, {x, y}, ctx);
  };
  llvm::SmallVector<IteratorType> iters =
      transB ? llvm::SmallVector<IteratorType>{IteratorType::parallel,
                                               IteratorType::parallel,
                                               IteratorType::reduction}
             : llvm::SmallVector<IteratorType>{IteratorType::parallel,
                                               IteratorType::reduction,
                                               IteratorType::parallel};
  return generic({a, bm}, zeros({m, n}),
                 {transA ? map(k, i) : map(i, k),
                  transB ? map(j, k) : map(k, j), map(i, j)},
                 iters, multiplyAdd);
}

Value TileBuilder::matvec(Value a, Value x, bool transA) {
  auto as = shapeOf(a);
  int64_t m = transA ? as[1] : as[0];
  MLIRContext *ctx = b.getContext();
  // A is [n, m] when transposed: loop over its rows outside (k, i).
  AffineExpr i, k;
  if (transA)
    bindDims(ctx, k, i);
  else
    bindDims(ctx, i, k);
  llvm::SmallVector<IteratorType> iters =
      transA ? llvm::SmallVector<IteratorType>{IteratorType::reduction,
                                               IteratorType::parallel}
             : llvm::SmallVector<IteratorType>{IteratorType::parallel,
                                               IteratorType::reduction};
  return generic({a, x}, zeros({m}),
                 {transA ? AffineMap::get(2, 0, {k, i}, ctx)
                         : AffineMap::get(2, 0, {i, k}, ctx),
                  AffineMap::get(2, 0, {k}, ctx),
                  AffineMap::get(2, 0, {i}, ctx)},
                 iters, multiplyAdd);
}

/// An elementwise binary op over identically shaped tensors.
static Value
elementwise(TileBuilder &tb, Value a, Value c,
            llvm::function_ref<Value(OpBuilder &, Location, Value, Value)> fn) {
  auto shape = TileBuilder::shapeOf(a);
  OpBuilder &b = tb.getBuilder();
  AffineMap id = b.getMultiDimIdentityMap(shape.size());
  llvm::SmallVector<IteratorType> iters(shape.size(), IteratorType::parallel);
  return tb.generic({a, c}, tb.empty(shape), {id, id, id}, iters,
                    [&](OpBuilder &nb, Location l, ValueRange args) {
                      return fn(nb, l, args[0], args[1]);
                    });
}

Value TileBuilder::add(Value a, Value c) {
  return elementwise(*this, a, c,
                     [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
                       return arith::AddFOp::create(nb, l, x, y);
                     });
}

Value TileBuilder::mul(Value a, Value c) {
  return elementwise(*this, a, c,
                     [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
                       return arith::MulFOp::create(nb, l, x, y);
                     });
}

Value TileBuilder::fma(Value a, Value c, Value addend) {
  auto shape = shapeOf(a);
  AffineMap id = b.getMultiDimIdentityMap(shape.size());
  llvm::SmallVector<IteratorType> iters(shape.size(), IteratorType::parallel);
  return generic({a, c, addend}, empty(shape), {id, id, id, id}, iters,
                 [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return math::FmaOp::create(nb, l, args[0], args[1], args[2]);
                 });
}

Value TileBuilder::scale(Value a, double s) {
  if (s == 1.0)
    return a;
  auto shape = shapeOf(a);
  AffineMap id = b.getMultiDimIdentityMap(shape.size());
  llvm::SmallVector<IteratorType> iters(shape.size(), IteratorType::parallel);
  Value factor = scalar(s);
  return generic({a}, empty(shape), {id, id}, iters,
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[0], factor);
                 });
}

Value TileBuilder::scaleBy(Value a, Value scalar0d) {
  auto shape = shapeOf(a);
  AffineMap id = b.getMultiDimIdentityMap(shape.size());
  AffineMap none = AffineMap::get(shape.size(), 0, {}, b.getContext());
  llvm::SmallVector<IteratorType> iters(shape.size(), IteratorType::parallel);
  return generic({a, scalar0d}, empty(shape), {id, none, id}, iters,
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[0], args[1]);
                 });
}

Value TileBuilder::scaleRows(Value a, Value u) {
  auto shape = shapeOf(a);
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  AffineMap id = AffineMap::get(2, 0, {i, j}, ctx);
  return generic({a, u}, empty(shape), {id, AffineMap::get(2, 0, {i}, ctx), id},
                 {IteratorType::parallel, IteratorType::parallel},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[0], args[1]);
                 });
}

Value TileBuilder::scaleCols(Value a, Value u) {
  auto shape = shapeOf(a);
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  AffineMap id = AffineMap::get(2, 0, {i, j}, ctx);
  return generic({a, u}, empty(shape), {id, AffineMap::get(2, 0, {j}, ctx), id},
                 {IteratorType::parallel, IteratorType::parallel},
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[0], args[1]);
                 });
}

Value TileBuilder::dotRows(Value a, Value c) {
  auto shape = shapeOf(a);
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  AffineMap id = AffineMap::get(2, 0, {i, j}, ctx);
  return generic(
      {a, c}, zeros({shape[0]}), {id, id, AffineMap::get(2, 0, {i}, ctx)},
      {IteratorType::parallel, IteratorType::reduction}, multiplyAdd);
}

Value TileBuilder::sum(Value v) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i;
  bindDims(ctx, i);
  return generic(
      {v}, zeros({}),
      {AffineMap::get(1, 0, {i}, ctx), AffineMap::get(1, 0, {}, ctx)},
      {IteratorType::reduction},
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::AddFOp::create(nb, l, args[0], args[1]);
      });
}

Value TileBuilder::dot(Value a, Value c) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i;
  bindDims(ctx, i);
  AffineMap id = AffineMap::get(1, 0, {i}, ctx);
  return generic({a, c}, zeros({}), {id, id, AffineMap::get(1, 0, {}, ctx)},
                 {IteratorType::reduction}, multiplyAdd);
}

Value TileBuilder::outer(Value a, Value c) {
  int64_t m = shapeOf(a)[0], n = shapeOf(c)[0];
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  return generic({a, c}, empty({m, n}),
                 {AffineMap::get(2, 0, {i}, ctx),
                  AffineMap::get(2, 0, {j}, ctx),
                  AffineMap::get(2, 0, {i, j}, ctx)},
                 {IteratorType::parallel, IteratorType::parallel},
                 [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   return arith::MulFOp::create(nb, l, args[0], args[1]);
                 });
}

Value TileBuilder::transpose(Value a) {
  auto shape = shapeOf(a);
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  return generic(
      {a}, empty({shape[1], shape[0]}),
      {AffineMap::get(2, 0, {j, i}, ctx), AffineMap::get(2, 0, {i, j}, ctx)},
      {IteratorType::parallel, IteratorType::parallel},
      [](OpBuilder &, Location, ValueRange args) -> Value { return args[0]; });
}

Value TileBuilder::castTo(Value a, Type elementType) {
  auto type = cast<RankedTensorType>(a.getType());
  if (type.getElementType() == elementType)
    return a;
  auto shape = type.getShape();
  AffineMap id = b.getMultiDimIdentityMap(shape.size());
  llvm::SmallVector<IteratorType> iters(shape.size(), IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, shape, elementType);
  unsigned fromWidth = type.getElementType().getIntOrFloatBitWidth();
  unsigned toWidth = elementType.getIntOrFloatBitWidth();
  return generic({a}, init, {id, id}, iters,
                 [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                   if (toWidth > fromWidth)
                     return arith::ExtFOp::create(nb, l, elementType, args[0]);
                   return arith::TruncFOp::create(nb, l, elementType, args[0]);
                 });
}

bool mlir::hla::isMatrixProduct(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      g.getNumLoops() != 3 || g.getNumReductionLoops() != 1)
    return false;
  for (Value operand : g->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || type.getRank() != 2)
      return false;
  }
  Block &body = g.getRegion().front();
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || body.getOperations().size() > 5)
    return false;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out ? add.getRhs() : add.getLhs();
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if ((add.getLhs() != out && add.getRhs() != out) || !mul)
    return false;
  // Bilinear in the two inputs: each factor one of them, maybe widened.
  auto input = [&](Value factor) -> int {
    if (auto ext = factor.getDefiningOp<arith::ExtFOp>())
      factor = ext.getIn();
    auto arg = dyn_cast<BlockArgument>(factor);
    return arg && arg.getOwner() == &body && arg.getArgNumber() < 2
               ? int(arg.getArgNumber())
               : -1;
  };
  int lhs = input(mul.getLhs()), rhs = input(mul.getRhs());
  return lhs >= 0 && rhs >= 0 && lhs != rhs;
}

Value mlir::hla::splitForBf16Operands(OpBuilder &b, linalg::GenericOp product,
                                      Bf16Parts &known) {
  Location loc = product.getLoc();
  OpBuilder::InsertionGuard guard(b);
  Type bf16 = b.getBF16Type();
  // (hi, lo) of an f32 operand, made once, where it is defined (a loop's
  // invariant is split outside it); a 16-bit one is exact already.
  auto parts = [&](Value x) -> std::pair<Value, Value> {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getElementType().getIntOrFloatBitWidth() <= 16)
      return {x, Value()};
    if (auto it = known.find(x); it != known.end())
      return it->second;
    if (Operation *def = x.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(x).getOwner());
    TileBuilder t(b, loc);
    Value hi = t.castTo(t.castTo(x, bf16), type.getElementType());
    Value lo = t.generic(
        {x, hi}, t.empty(type.getShape()),
        llvm::SmallVector<AffineMap>(3, b.getMultiDimIdentityMap(2)),
        {IteratorType::parallel, IteratorType::parallel},
        [](OpBuilder &nb, Location l, ValueRange args) {
          return arith::SubFOp::create(nb, l, args[0], args[1]).getResult();
        });
    return known[x] = {hi, lo};
  };
  auto [aHi, aLo] = parts(product.getDpsInputOperand(0)->get());
  auto [bHi, bLo] = parts(product.getDpsInputOperand(1)->get());
  // The small terms first, each product accumulating into the next.
  llvm::SmallVector<std::pair<Value, Value>> terms;
  if (aLo)
    terms.push_back({aLo, bHi});
  if (bLo)
    terms.push_back({aHi, bLo});
  terms.push_back({aHi, bHi});
  b.setInsertionPoint(product);
  Value acc = product.getDpsInitOperand(0)->get();
  for (auto [x, y] : terms) {
    // Operands set by position: A and B may be the same value (A·Aᵀ).
    Operation *term = b.clone(*product);
    term->setOperand(product.getDpsInputOperand(0)->getOperandNumber(), x);
    term->setOperand(product.getDpsInputOperand(1)->getOperandNumber(), y);
    term->setOperand(product.getDpsInitOperand(0)->getOperandNumber(), acc);
    acc = term->getResult(0);
  }
  product->replaceAllUsesWith(ValueRange{acc});
  product->erase();
  return acc;
}

void mlir::hla::splitMatrixProducts(OpBuilder &b,
                                    llvm::ArrayRef<Operation *> roots,
                                    Bf16Parts &known) {
  llvm::SmallVector<linalg::GenericOp> products;
  for (Operation *root : roots)
    root->walk([&](linalg::GenericOp g) {
      if (isMatrixProduct(g))
        products.push_back(g);
    });
  for (linalg::GenericOp product : products)
    splitForBf16Operands(b, product, known);
}

//===----------------------------------------------------------------------===//
// Monoid values
//===----------------------------------------------------------------------===//

/// The monoid's identity for component `c`, shaped like `type`.
Value mlir::hla::buildMonoidIdentity(OpBuilder &b, Location loc,
                                     const MonoidSpec &spec, unsigned c,
                                     RankedTensorType type) {
  Type element = type.getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  Value zeros =
      linalg::FillOp::create(
          b, loc, zero,
          Value(tensor::EmptyOp::create(b, loc, type.getShape(), element)))
          .getResult(0);
  const MonoidSlot &slot = spec.components[c];
  if (!slot.eyeIdentity)
    return zeros;
  // 1 on the diagonal of the trailing matrix (or everywhere for a scalar).
  int64_t rank = type.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  llvm::SmallVector<utils::IteratorType> iters(rank,
                                               utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{}, ValueRange{zeros},
             llvm::ArrayRef<AffineMap>{id}, iters, "", "",
             [&](OpBuilder &nb, Location l, ValueRange) {
               Value one = arith::ConstantOp::create(
                   nb, l, nb.getFloatAttr(element, 1));
               Value zeroF = arith::ConstantOp::create(
                   nb, l, nb.getFloatAttr(element, 0));
               Value result = one;
               if (slot.getRank() == 2) {
                 Value r = linalg::IndexOp::create(nb, l, rank - 2);
                 Value c = linalg::IndexOp::create(nb, l, rank - 1);
                 Value onDiagonal = arith::CmpIOp::create(
                     nb, l, arith::CmpIPredicate::eq, r, c);
                 result =
                     arith::SelectOp::create(nb, l, onDiagonal, one, zeroF);
               }
               linalg::YieldOp::create(nb, l, result);
             })
      .getResult(0);
}

llvm::SmallVector<Value>
mlir::hla::combineCarried(OpBuilder &b, Location loc, MonoidAttr monoid,
                          ValueRange lhsCarried, ValueRange rhsFull,
                          llvm::ArrayRef<Type> fullTypes) {
  const MonoidSpec &spec = monoid.getSpec();
  llvm::SmallVector<unsigned> carried = spec.getCarryComponents();
  llvm::SmallVector<Value> lhs;
  for (unsigned c = 0; c < spec.components.size(); ++c) {
    auto pos = llvm::find(carried, c);
    if (pos != carried.end()) {
      lhs.push_back(lhsCarried[pos - carried.begin()]);
    } else {
      auto type = cast<RankedTensorType>(fullTypes[c]);
      lhs.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
    }
  }
  auto combine =
      CombineOp::create(b, loc, TypeRange(fullTypes), monoid, lhs, rhsFull);
  llvm::SmallVector<Value> result;
  for (unsigned c : carried)
    result.push_back(combine.getResult(c));
  return result;
}
