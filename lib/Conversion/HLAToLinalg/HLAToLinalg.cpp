//===- HLAToLinalg.cpp - hla.combine to linalg --------------------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Evaluates a combine rule on tensors [lead..., component shape]: every term
// is a matrix chain, batched over the leading dimensions. A value in the
// chain is a scalar, a column, a row or a (possibly transposed) matrix, and
// each product is the one linalg contraction that fits: matmul, matvec,
// vecmat, dot, outer product, or a broadcast scalar multiply.
//
//===----------------------------------------------------------------------===//

#include "hla/Conversion/HLAToLinalg.h"
#include "hla/Conversion/Passes.h"
#include "hla/Dialect/HLA/IR/HLAAttrs.h"
#include "hla/Dialect/HLA/IR/HLAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "convert-hla-to-linalg"

namespace mlir::hla {
#define GEN_PASS_DEF_CONVERTHLATOLINALGPASS
#include "hla/Conversion/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;
using utils::IteratorType;

namespace {

/// A value of the chain: a tensor [lead..., dims] and how to read its dims.
struct ChainValue {
  enum class Kind { Scalar, Column, Row, Matrix };
  Kind kind = Kind::Scalar;
  Value tensor;
  /// Matrices only: the tensor holds the transpose of the value.
  bool transposed = false;
};

class BatchedBuilder {
public:
  BatchedBuilder(OpBuilder &b, Location loc, llvm::ArrayRef<int64_t> lead,
                 Type element)
      : b(b), loc(loc), lead(lead), element(element) {}

  unsigned numLead() const { return lead.size(); }

  Value empty(llvm::ArrayRef<int64_t> trailing) {
    llvm::SmallVector<int64_t> shape(lead);
    llvm::append_range(shape, trailing);
    return tensor::EmptyOp::create(b, loc, shape, element);
  }
  Value zeros(llvm::ArrayRef<int64_t> trailing) {
    Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0));
    return linalg::FillOp::create(b, loc, zero, empty(trailing)).getResult(0);
  }

  /// Maps over `numLead + extra` dims: the lead dims, then `trailing` (dim
  /// positions among the extra dims).
  AffineMap map(unsigned extra, llvm::ArrayRef<unsigned> trailing) {
    llvm::SmallVector<AffineExpr> exprs;
    for (unsigned d = 0; d < numLead(); ++d)
      exprs.push_back(b.getAffineDimExpr(d));
    for (unsigned t : trailing)
      exprs.push_back(b.getAffineDimExpr(numLead() + t));
    return AffineMap::get(numLead() + extra, 0, exprs, b.getContext());
  }

  Value generic(llvm::ArrayRef<Value> ins, Value init,
                llvm::ArrayRef<AffineMap> maps, unsigned extra,
                llvm::ArrayRef<IteratorType> extraIters, bool accumulate) {
    llvm::SmallVector<IteratorType> iters(numLead(), IteratorType::parallel);
    llvm::append_range(iters, extraIters);
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
               iters, "", "",
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Value product = args[0];
                 for (size_t i = 1; i < ins.size(); ++i)
                   product = arith::MulFOp::create(nb, l, product, args[i]);
                 if (accumulate)
                   product = arith::AddFOp::create(nb, l, args.back(), product);
                 linalg::YieldOp::create(nb, l, product);
               })
        .getResult(0);
  }

  int64_t dim(Value tensor, unsigned trailingIndex) {
    return cast<RankedTensorType>(tensor.getType())
        .getDimSize(numLead() + trailingIndex);
  }

  /// The (rows, cols) of a matrix value as read (after its transpose).
  std::pair<int64_t, int64_t> matrixShape(const ChainValue &v) {
    int64_t r = dim(v.tensor, 0), c = dim(v.tensor, 1);
    return v.transposed ? std::make_pair(c, r) : std::make_pair(r, c);
  }
  /// Map positions (row, col) of a matrix value over dims (i, j).
  llvm::SmallVector<unsigned> matrixDims(const ChainValue &v, unsigned i,
                                         unsigned j) {
    return v.transposed ? llvm::SmallVector<unsigned>{j, i}
                        : llvm::SmallVector<unsigned>{i, j};
  }

  ChainValue multiply(const ChainValue &x, const ChainValue &y);
  Value materialize(const ChainValue &v);
  Value add(Value a, Value c);
  Value scale(Value a, double s);

private:
  OpBuilder &b;
  Location loc;
  llvm::SmallVector<int64_t> lead;
  Type element;
};

using Kind = ChainValue::Kind;

ChainValue BatchedBuilder::multiply(const ChainValue &x, const ChainValue &y) {
  auto P = IteratorType::parallel;
  auto R = IteratorType::reduction;
  // Scalar times anything: broadcast.
  if (x.kind == Kind::Scalar || y.kind == Kind::Scalar) {
    const ChainValue &s = x.kind == Kind::Scalar ? x : y;
    const ChainValue &o = x.kind == Kind::Scalar ? y : x;
    if (o.kind == Kind::Scalar)
      return {Kind::Scalar,
              generic({s.tensor, o.tensor}, empty({}),
                      {map(0, {}), map(0, {}), map(0, {})}, 0, {}, false)};
    unsigned rank = o.kind == Kind::Matrix ? 2 : 1;
    llvm::SmallVector<unsigned> all = rank == 2
                                          ? llvm::SmallVector<unsigned>{0, 1}
                                          : llvm::SmallVector<unsigned>{0};
    llvm::SmallVector<int64_t> shape;
    for (unsigned t = 0; t < rank; ++t)
      shape.push_back(dim(o.tensor, t));
    Value result =
        generic({o.tensor, s.tensor}, empty(shape),
                {map(rank, all), map(rank, {}), map(rank, all)}, rank,
                llvm::SmallVector<IteratorType>(rank, P), false);
    return {o.kind, result, o.transposed};
  }
  // Matrix · matrix: dims (i, j, k).
  if (x.kind == Kind::Matrix && y.kind == Kind::Matrix) {
    int64_t m = matrixShape(x).first, n = matrixShape(y).second;
    Value result = generic({x.tensor, y.tensor}, zeros({m, n}),
                           {map(3, matrixDims(x, 0, 2)),
                            map(3, matrixDims(y, 2, 1)), map(3, {0, 1})},
                           3, {P, P, R}, true);
    return {Kind::Matrix, result};
  }
  // Matrix · column: dims (i, k).
  if (x.kind == Kind::Matrix && y.kind == Kind::Column) {
    int64_t m = matrixShape(x).first;
    Value result =
        generic({x.tensor, y.tensor}, zeros({m}),
                {map(2, matrixDims(x, 0, 1)), map(2, {1}), map(2, {0})}, 2,
                {P, R}, true);
    return {Kind::Column, result};
  }
  // Row · matrix: dims (j, k).
  if (x.kind == Kind::Row && y.kind == Kind::Matrix) {
    int64_t n = matrixShape(y).second;
    Value result =
        generic({x.tensor, y.tensor}, zeros({n}),
                {map(2, {1}), map(2, matrixDims(y, 1, 0)), map(2, {0})}, 2,
                {P, R}, true);
    return {Kind::Row, result};
  }
  // Row · column: a dot product.
  if (x.kind == Kind::Row && y.kind == Kind::Column) {
    Value result =
        generic({x.tensor, y.tensor}, zeros({}),
                {map(1, {0}), map(1, {0}), map(1, {})}, 1, {R}, true);
    return {Kind::Scalar, result};
  }
  // Column · row: an outer product.
  int64_t m = dim(x.tensor, 0), n = dim(y.tensor, 0);
  Value result =
      generic({x.tensor, y.tensor}, empty({m, n}),
              {map(2, {0}), map(2, {1}), map(2, {0, 1})}, 2, {P, P}, false);
  return {Kind::Matrix, result};
}

Value BatchedBuilder::materialize(const ChainValue &v) {
  if (v.kind != Kind::Matrix || !v.transposed)
    return v.tensor;
  auto [r, c] = matrixShape(v);
  return generic({v.tensor}, empty({r, c}), {map(2, {1, 0}), map(2, {0, 1})}, 2,
                 {IteratorType::parallel, IteratorType::parallel}, false);
}

Value BatchedBuilder::add(Value a, Value c) {
  unsigned rank = cast<RankedTensorType>(a.getType()).getRank() - numLead();
  llvm::SmallVector<unsigned> all;
  llvm::SmallVector<int64_t> shape;
  for (unsigned t = 0; t < rank; ++t) {
    all.push_back(t);
    shape.push_back(dim(a, t));
  }
  AffineMap id = map(rank, all);
  llvm::SmallVector<IteratorType> iters(numLead() + rank,
                                        IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{a.getType()}, ValueRange{a, c},
             ValueRange{empty(shape)}, llvm::ArrayRef<AffineMap>{id, id, id},
             iters, "", "",
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   Value(arith::AddFOp::create(nb, l, args[0], args[1])));
             })
      .getResult(0);
}

Value BatchedBuilder::scale(Value a, double s) {
  if (s == 1.0)
    return a;
  unsigned rank = cast<RankedTensorType>(a.getType()).getRank() - numLead();
  llvm::SmallVector<unsigned> all;
  llvm::SmallVector<int64_t> shape;
  for (unsigned t = 0; t < rank; ++t) {
    all.push_back(t);
    shape.push_back(dim(a, t));
  }
  AffineMap id = map(rank, all);
  llvm::SmallVector<IteratorType> iters(numLead() + rank,
                                        IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{a.getType()}, ValueRange{a},
             ValueRange{empty(shape)}, llvm::ArrayRef<AffineMap>{id, id}, iters,
             "", "",
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value factor = arith::ConstantOp::create(
                   nb, l, nb.getFloatAttr(element, s));
               linalg::YieldOp::create(
                   nb, l, Value(arith::MulFOp::create(nb, l, args[0], factor)));
             })
      .getResult(0);
}

} // namespace

llvm::SmallVector<Value> mlir::hla::lowerCombineToLinalg(CombineOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  const MonoidSpec &spec = op.getMonoid().getSpec();
  auto firstType = cast<RankedTensorType>(op.getLhs()[0].getType());
  int64_t leadRank =
      firstType.getRank() - int64_t(spec.components[0].getRank());
  BatchedBuilder bb(b, loc, firstType.getShape().take_front(leadRank),
                    firstType.getElementType());

  llvm::SmallVector<Value> replacements(op.getNumResults());
  for (auto [c, result] : llvm::enumerate(op.getResults())) {
    if (result.use_empty())
      continue;
    Value sum;
    for (const MonoidTerm &term : spec.combine[c]) {
      std::optional<ChainValue> product;
      double coeff = term.negated ? -1.0 : 1.0;
      for (const MonoidFactor &f : term.factors) {
        if (f.kind == MonoidFactor::Kind::Param) {
          coeff *= spec.params[f.index].value;
          continue;
        }
        const MonoidSlot &slot = spec.components[f.index];
        Value tensor = f.side == MonoidSide::A ? op.getLhs()[f.index]
                                               : op.getRhs()[f.index];
        ChainValue v;
        v.tensor = tensor;
        switch (slot.getRank()) {
        case 0:
          v.kind = Kind::Scalar;
          break;
        case 1:
          v.kind = f.transposed ? Kind::Row : Kind::Column;
          break;
        default:
          v.kind = Kind::Matrix;
          v.transposed = f.transposed;
          break;
        }
        product = product ? bb.multiply(*product, v) : v;
      }
      Value value;
      if (!product) {
        // The empty product: 1 in the component's shape (a scalar rule).
        Value one = arith::ConstantOp::create(
            b, loc, b.getFloatAttr(firstType.getElementType(), 1.0));
        value = linalg::FillOp::create(b, loc, one, bb.empty({})).getResult(0);
      } else {
        value = bb.materialize(*product);
      }
      value = bb.scale(value, coeff);
      sum = sum ? bb.add(sum, value) : value;
    }
    result.replaceAllUsesWith(sum);
    replacements[c] = sum;
  }
  op.erase();
  return replacements;
}

namespace {

/// φ(z) = m^-½ exp(Ω z − ‖z‖²/2) with z = √s x, over every leading index:
/// the projections Ω x and the squared norms as two reductions, then one
/// elementwise pass.
static void lowerFeatureMap(FeatureMapOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  int64_t lead = inType.getRank() - 1;
  int64_t features = outType.getShape().back();
  double s = op.getScale().convertToDouble();
  MLIRContext *ctx = b.getContext();
  auto f = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  auto toF32 = [&](OpBuilder &nb, Location l, Value v) -> Value {
    if (v.getType() == nb.getF32Type())
      return v;
    return arith::ExtFOp::create(nb, l, nb.getF32Type(), v);
  };
  auto zeros = [&](llvm::ArrayRef<int64_t> shape) -> Value {
    return linalg::FillOp::create(
               b, loc, f(0.0),
               Value(tensor::EmptyOp::create(b, loc, shape, f32)))
        .getResult(0);
  };
  // dims: lead..., m, d
  llvm::SmallVector<AffineExpr> leadDims;
  for (int64_t i = 0; i < lead; ++i)
    leadDims.push_back(b.getAffineDimExpr(i));
  AffineExpr mDim = b.getAffineDimExpr(lead),
             dDim = b.getAffineDimExpr(lead + 1);
  auto withDims = [&](llvm::ArrayRef<AffineExpr> tail, int64_t dims) {
    llvm::SmallVector<AffineExpr> exprs(leadDims);
    llvm::append_range(exprs, tail);
    return AffineMap::get(dims, 0, exprs, ctx);
  };
  llvm::SmallVector<utils::IteratorType> projIters(
      lead, utils::IteratorType::parallel);
  projIters.push_back(utils::IteratorType::parallel);
  projIters.push_back(utils::IteratorType::reduction);
  llvm::SmallVector<int64_t> outShape(outType.getShape());
  double root = std::sqrt(s);
  Value projected =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(outShape, f32)},
          ValueRange{op.getInput(), op.getOmega()}, ValueRange{zeros(outShape)},
          llvm::ArrayRef<AffineMap>{
              withDims({dDim}, lead + 2),
              AffineMap::get(lead + 2, 0, {mDim, dDim}, ctx),
              withDims({mDim}, lead + 2)},
          projIters,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value prod = arith::MulFOp::create(nb, l, toF32(nb, l, args[0]),
                                               toF32(nb, l, args[1]));
            linalg::YieldOp::create(
                nb, l, Value(arith::AddFOp::create(nb, l, args[2], prod)));
          })
          .getResult(0);
  llvm::SmallVector<int64_t> leadShape(inType.getShape().drop_back());
  llvm::SmallVector<utils::IteratorType> normIters(
      lead, utils::IteratorType::parallel);
  normIters.push_back(utils::IteratorType::reduction);
  Value squares =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(leadShape, f32)},
          ValueRange{op.getInput()}, ValueRange{zeros(leadShape)},
          llvm::ArrayRef<AffineMap>{
              AffineMap::getMultiDimIdentityMap(lead + 1, ctx),
              AffineMap::get(lead + 1, 0, leadDims, ctx)},
          normIters,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value x = toF32(nb, l, args[0]);
            Value sq = arith::MulFOp::create(nb, l, x, x);
            linalg::YieldOp::create(
                nb, l, Value(arith::AddFOp::create(nb, l, args[1], sq)));
          })
          .getResult(0);
  llvm::SmallVector<utils::IteratorType> outIters(
      lead + 1, utils::IteratorType::parallel);
  double norm = 1.0 / std::sqrt(double(features));
  Value result =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(outShape, f32)},
          ValueRange{projected, squares},
          ValueRange{tensor::EmptyOp::create(b, loc, outShape, f32)},
          llvm::ArrayRef<AffineMap>{
              AffineMap::getMultiDimIdentityMap(lead + 1, ctx),
              AffineMap::get(lead + 1, 0, leadDims, ctx),
              AffineMap::getMultiDimIdentityMap(lead + 1, ctx)},
          outIters,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            auto c = [&](double v) -> Value {
              return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
            };
            Value e = arith::SubFOp::create(
                nb, l, arith::MulFOp::create(nb, l, args[0], c(root)),
                arith::MulFOp::create(nb, l, args[1], c(0.5 * s)));
            Value phi = arith::MulFOp::create(
                nb, l, math::ExpOp::create(nb, l, e), c(norm));
            linalg::YieldOp::create(nb, l, phi);
          })
          .getResult(0);
  op.getOutput().replaceAllUsesWith(result);
  op.erase();
}

struct ConvertHLAToLinalgPass
    : public hla::impl::ConvertHLAToLinalgPassBase<ConvertHLAToLinalgPass> {
  using ConvertHLAToLinalgPassBase::ConvertHLAToLinalgPassBase;

  void runOnOperation() override {
    llvm::SmallVector<FeatureMapOp> featureMaps;
    getOperation()->walk([&](FeatureMapOp op) { featureMaps.push_back(op); });
    for (FeatureMapOp op : featureMaps) {
      if (!cast<RankedTensorType>(op.getInput().getType()).hasStaticShape()) {
        op.emitError() << "convert-hla-to-linalg: needs static shapes";
        return signalPassFailure();
      }
      lowerFeatureMap(op);
    }
    llvm::SmallVector<CombineOp> combines;
    getOperation()->walk([&](CombineOp op) { combines.push_back(op); });
    for (CombineOp op : combines) {
      if (!cast<RankedTensorType>(op.getLhs()[0].getType()).hasStaticShape()) {
        op.emitError() << "convert-hla-to-linalg: needs static shapes";
        return signalPassFailure();
      }
      lowerCombineToLinalg(op);
    }
  }
};
} // namespace
