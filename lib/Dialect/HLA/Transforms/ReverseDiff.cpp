//===- ReverseDiff.cpp - Reverse differentiation of tile programs -*- C++ -*-//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reverse-mode differentiation of the straight-line tile programs that
// hla-chunk builds for a chunk: the program runs backward from the seeds,
// each op adding its operands' cotangents into a map.
//
// A linalg.generic y = G(x_1 .. x_n; init) with indexing maps M_1 .. M_n
// and M_y computes, at every point p of its iteration space,
//     y[M_y p] = init[M_y p] + Σ_{reduction dims} f(x_1[M_1 p], .., x_n[M_n p])
// when its body's result depends on the output block argument as that
// argument plus something not reading it (an accumulation; its derivative
// with respect to the argument is 1), or y[M_y p] = f(...) (all dims
// parallel) when the body does not read the argument. So
//     ∂L/∂x_i[M_i p] += Σ_{p ↦ M_i p} ∂L/∂y[M_y p] · ∂f/∂x_i (p)
// is one more generic over the same iteration space: the forward body and
// its derivative (forward-mode, symbolic, over the body's arith and math
// ops), an extra input ∂L/∂y read through M_y, and an output read through
// M_i, whose dims are its parallel ones and every other dim a reduction
// (so M_i must be a projection of the dims). An input read at several
// positions gets one such generic per position.
//
// Slices move cotangents back where they came from: extract_slice's
// source gets the result's cotangent inserted into zeros; insert_slice's
// source gets the slice of the result's cotangent and its destination the
// result's cotangent with zeros in the slice. Reshapes (expand_shape,
// collapse_shape) reshape the cotangent back.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/ReverseDiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::hla;

OpRecorder::OpRecorder(OpBuilder &b)
    : b(b), block(b.getInsertionBlock()), mark(nullptr) {
  Block::iterator at = b.getInsertionPoint();
  if (at != block->begin())
    mark = &*std::prev(at);
}

llvm::SmallVector<Operation *> OpRecorder::recorded() const {
  llvm::SmallVector<Operation *> ops;
  Block::iterator it = mark ? std::next(mark->getIterator()) : block->begin();
  Block::iterator end =
      b.getInsertionBlock() == block ? b.getInsertionPoint() : block->end();
  for (; it != end; ++it)
    ops.push_back(&*it);
  return ops;
}

namespace {

/// A body value's derivative with respect to one block argument: none, 1,
/// or a value.
struct Tangent {
  enum class Kind { Zero, One, Value } kind = Kind::Zero;
  Value value;
  static Tangent zero() { return {}; }
  static Tangent one() { return {Kind::One, {}}; }
  static Tangent of(Value v) { return {Kind::Value, v}; }
  bool isZero() const { return kind == Kind::Zero; }
  bool isOne() const { return kind == Kind::One; }
};

/// How a generic's body result depends on its output block argument.
enum class AccumulatorUse { None, Summed, Other };

/// Kinds only: propagates "depends on the accumulator as itself (One),
/// not at all (Zero), or otherwise" through the body.
AccumulatorUse accumulatorUse(linalg::GenericOp generic) {
  Block *body = generic.getBody();
  BlockArgument acc = body->getArgument(generic.getNumDpsInputs());
  enum Kind { Zero, One, Other };
  llvm::DenseMap<Value, Kind> kinds;
  auto kindOf = [&](Value v) {
    auto it = kinds.find(v);
    return it == kinds.end() ? Zero : it->second;
  };
  kinds[acc] = One;
  for (Operation &op : body->without_terminator()) {
    Kind result = Zero;
    if (isa<arith::AddFOp>(op)) {
      Kind a = kindOf(op.getOperand(0)), b = kindOf(op.getOperand(1));
      result = a == Zero ? b : b == Zero ? a : Other;
    } else if (isa<arith::SubFOp>(op)) {
      Kind a = kindOf(op.getOperand(0)), b = kindOf(op.getOperand(1));
      result = b == Zero ? a : Other;
    } else if (auto select = dyn_cast<arith::SelectOp>(op)) {
      Kind a = kindOf(select.getTrueValue()),
           b = kindOf(select.getFalseValue());
      result = kindOf(select.getCondition()) != Zero ? Other
               : a == b                              ? a
                                                     : Other;
    } else if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
      result = kindOf(op.getOperand(0));
    } else {
      for (Value operand : op.getOperands())
        if (kindOf(operand) != Zero)
          result = Other;
    }
    for (Value r : op.getResults())
      kinds[r] = result;
  }
  switch (kindOf(body->getTerminator()->getOperand(0))) {
  case Zero:
    return AccumulatorUse::None;
  case One:
    return AccumulatorUse::Summed;
  case Other:
    return AccumulatorUse::Other;
  }
  llvm_unreachable("kinds");
}

/// The forward body of `generic` cloned into the builder's block (the
/// inputs' block arguments mapped to `inputs`; what reads the output's
/// block argument is left out) and its derivative with respect to input
/// `wrt`. Fails where the derivative needs a value left out or an op has
/// no rule.
class BodyTangent {
public:
  BodyTangent(OpBuilder &b, Location loc, linalg::GenericOp generic)
      : b(b), loc(loc), generic(generic) {}

  FailureOr<Tangent> differentiate(ValueRange inputs, unsigned wrt,
                                   std::string &error) {
    Block *body = generic.getBody();
    for (unsigned i = 0; i < inputs.size(); ++i)
      primal.map(body->getArgument(i), inputs[i]);
    tangents[body->getArgument(wrt)] = Tangent::one();
    for (Operation &op : body->without_terminator()) {
      bool available = llvm::all_of(op.getOperands(), [&](Value v) {
        return primal.contains(v) ||
               v.getParentRegion() != &generic.getRegion();
      });
      if (available)
        b.clone(op, primal);
      if (failed(rule(op, error)))
        return failure();
    }
    return tangentOf(body->getTerminator()->getOperand(0));
  }

  /// `t` as a value of `type` (f32 for One).
  Value materialize(Tangent t, Type type) {
    if (t.isOne())
      return constant(type, 1.0);
    if (t.isZero())
      return constant(type, 0.0);
    return t.value;
  }

private:
  Value constant(Type type, double value) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  }
  Tangent tangentOf(Value v) const {
    auto it = tangents.find(v);
    return it == tangents.end() ? Tangent::zero() : it->second;
  }
  /// The cloned value of forward value `v`, or null where it is left out.
  Value primalOf(Value v) {
    if (v.getParentRegion() != &generic.getRegion())
      return v;
    return primal.lookupOrNull(v);
  }
  Value add(Tangent x, Tangent y, Type type) {
    return arith::AddFOp::create(b, loc, materialize(x, type),
                                 materialize(y, type));
  }
  /// x · t (t a tangent; x a primal value).
  Tangent times(Value x, Tangent t) {
    if (t.isZero())
      return t;
    if (t.isOne())
      return Tangent::of(x);
    return Tangent::of(arith::MulFOp::create(b, loc, x, t.value));
  }
  Tangent sum(Tangent x, Tangent y, Type type) {
    if (x.isZero())
      return y;
    if (y.isZero())
      return x;
    return Tangent::of(add(x, y, type));
  }
  Tangent negate(Tangent t, Type type) {
    if (t.isZero())
      return t;
    return Tangent::of(arith::NegFOp::create(b, loc, materialize(t, type)));
  }

  LogicalResult rule(Operation &op, std::string &error) {
    if (op.getNumResults() != 1 || !isa<FloatType>(op.getResult(0).getType()))
      return success(); // integers, indices, predicates: no tangent
    bool allZero = llvm::all_of(op.getOperands(),
                                [&](Value v) { return tangentOf(v).isZero(); });
    if (allZero)
      return success();
    Value result = op.getResult(0);
    Type type = result.getType();
    // The primal values a rule reads.
    auto need = [&](Value v) -> Value {
      Value p = primalOf(v);
      if (!p)
        error = "the derivative of '" + op.getName().getStringRef().str() +
                "' reads the output's running value";
      return p;
    };
    Tangent t;
    if (isa<arith::AddFOp>(op)) {
      t = sum(tangentOf(op.getOperand(0)), tangentOf(op.getOperand(1)), type);
    } else if (isa<arith::SubFOp>(op)) {
      t = sum(tangentOf(op.getOperand(0)),
              negate(tangentOf(op.getOperand(1)), type), type);
    } else if (isa<arith::NegFOp>(op)) {
      t = negate(tangentOf(op.getOperand(0)), type);
    } else if (isa<arith::MulFOp, math::FmaOp>(op)) {
      // d(a·b) = a·db + b·da; d(a·b + c) adds dc.
      Tangent ta = tangentOf(op.getOperand(0)),
              tb = tangentOf(op.getOperand(1));
      Tangent left, right;
      if (!tb.isZero()) {
        Value a = need(op.getOperand(0));
        if (!a)
          return failure();
        left = times(a, tb);
      }
      if (!ta.isZero()) {
        Value bv = need(op.getOperand(1));
        if (!bv)
          return failure();
        right = times(bv, ta);
      }
      t = sum(left, right, type);
      if (isa<math::FmaOp>(op))
        t = sum(t, tangentOf(op.getOperand(2)), type);
    } else if (isa<arith::DivFOp>(op)) {
      // d(a / b) = da / b − (a / b) · db / b.
      Value bv = need(op.getOperand(1));
      if (!bv)
        return failure();
      Tangent ta = tangentOf(op.getOperand(0)),
              tb = tangentOf(op.getOperand(1));
      Tangent first, second;
      if (!ta.isZero())
        first = Tangent::of(
            arith::DivFOp::create(b, loc, materialize(ta, type), bv));
      if (!tb.isZero()) {
        Value q = need(result);
        if (!q)
          return failure();
        Value ratio = arith::DivFOp::create(b, loc, q, bv);
        second = negate(times(ratio, tb), type);
      }
      t = sum(first, second, type);
    } else if (isa<math::ExpOp>(op)) {
      Value e = need(result);
      if (!e)
        return failure();
      t = times(e, tangentOf(op.getOperand(0)));
    } else if (isa<math::Exp2Op>(op)) {
      Value e = need(result);
      if (!e)
        return failure();
      Value scaled =
          arith::MulFOp::create(b, loc, e, constant(type, llvm::numbers::ln2));
      t = times(scaled, tangentOf(op.getOperand(0)));
    } else if (isa<math::LogOp>(op)) {
      Value x = need(op.getOperand(0));
      if (!x)
        return failure();
      t = Tangent::of(arith::DivFOp::create(
          b, loc, materialize(tangentOf(op.getOperand(0)), type), x));
    } else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
                   arith::MinNumFOp>(op)) {
      // The tangent of the operand chosen (the first on ties).
      Value x = need(op.getOperand(0)), y = need(op.getOperand(1));
      if (!x || !y)
        return failure();
      bool max = isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
      Value first = arith::CmpFOp::create(
          b, loc, max ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OLE,
          x, y);
      t = Tangent::of(arith::SelectOp::create(
          b, loc, first, materialize(tangentOf(op.getOperand(0)), type),
          materialize(tangentOf(op.getOperand(1)), type)));
    } else if (auto select = dyn_cast<arith::SelectOp>(op)) {
      Tangent x = tangentOf(select.getTrueValue()),
              y = tangentOf(select.getFalseValue());
      if (x.kind == y.kind && x.value == y.value) {
        t = x;
      } else {
        Value c = need(select.getCondition());
        if (!c)
          return failure();
        t = Tangent::of(arith::SelectOp::create(b, loc, c, materialize(x, type),
                                                materialize(y, type)));
      }
    } else if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
      Tangent x = tangentOf(op.getOperand(0));
      Value v = materialize(x, op.getOperand(0).getType());
      t = Tangent::of(isa<arith::ExtFOp>(op)
                          ? Value(arith::ExtFOp::create(b, loc, type, v))
                          : Value(arith::TruncFOp::create(b, loc, type, v)));
    } else {
      error = "no derivative for '" + op.getName().getStringRef().str() + "'";
      return failure();
    }
    tangents[result] = t;
    return success();
  }

  OpBuilder &b;
  Location loc;
  linalg::GenericOp generic;
  IRMapping primal;
  llvm::DenseMap<Value, Tangent> tangents;
};

class ReverseDiff {
public:
  ReverseDiff(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  LogicalResult run(llvm::ArrayRef<Operation *> program,
                    llvm::ArrayRef<std::pair<Value, Value>> seeds,
                    llvm::ArrayRef<Value> wrt,
                    llvm::ArrayRef<ClosedFormVjp> closedForms) {
    // The ops each closed form covers, and the op making its result (where
    // its rule runs).
    llvm::DenseMap<Operation *, const ClosedFormVjp *> covered;
    for (const ClosedFormVjp &form : closedForms) {
      for (Operation *op : form.ops)
        covered[op] = &form;
      for (Operation *op : form.ops)
        for (Value r : op->getResults())
          for (Operation *user : r.getUsers())
            if (r != form.result && !covered.count(user))
              return user->emitError()
                     << "reverse differentiation: reads a value inside a "
                        "closed form's ops";
    }
    active.insert(wrt.begin(), wrt.end());
    for (Operation *op : program)
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return active.contains(v); }))
        active.insert(op->result_begin(), op->result_end());
    for (auto [value, cotangent] : seeds)
      accumulate(value, cotangent);
    for (Operation *op : llvm::reverse(program)) {
      if (llvm::none_of(op->getResults(),
                        [&](Value r) { return adjoints.contains(r); }))
        continue;
      if (const ClosedFormVjp *form = covered.lookup(op)) {
        if (form->result.getDefiningOp() == op && active.contains(form->input))
          accumulate(form->input,
                     form->vjp(b, loc, adjoints.lookup(form->result)));
        continue;
      }
      if (llvm::none_of(op->getOperands(),
                        [&](Value v) { return active.contains(v); }))
        continue;
      if (failed(propagate(op)))
        return failure();
    }
    return success();
  }

  Value gradientOf(Value v) {
    auto it = adjoints.find(v);
    return it != adjoints.end() ? it->second : zerosLike(v);
  }

private:
  Value zerosLike(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    Value zero = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type.getElementType(), 0.0));
    Value empty =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  }

  void accumulate(Value v, Value cotangent) {
    auto [it, inserted] = adjoints.try_emplace(v, cotangent);
    if (inserted)
      return;
    auto type = cast<RankedTensorType>(v.getType());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    it->second =
        linalg::GenericOp::create(
            b, loc, type, ValueRange{it->second, cotangent},
            ValueRange{tensor::EmptyOp::create(b, loc, type.getShape(),
                                               type.getElementType())},
            llvm::ArrayRef<AffineMap>{id, id, id},
            llvm::SmallVector<utils::IteratorType>(
                type.getRank(), utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  nb, l,
                  ValueRange{arith::AddFOp::create(nb, l, args[0], args[1])});
            })
            .getResult(0);
  }

  LogicalResult propagate(Operation *op) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      return propagateGeneric(generic);
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // One row of a tile whose cotangent has terms already (KDA's Γ at a
      // pair block's first token): added into that row, not a tile of
      // zeros with the row added to the whole (alive beside the running
      // sum until then).
      RankedTensorType source = slice.getSourceType();
      auto it = adjoints.find(slice.getSource());
      if (it != adjoints.end() && source.getRank() == 2 &&
          slice.getType().getRank() == 1 && slice.hasUnitStride() &&
          isZeroInteger(slice.getMixedOffsets()[1]) &&
          getConstantIntValue(slice.getMixedSizes()[1]) ==
              source.getDimSize(1)) {
        Value row =
            getValueOrCreateConstantIndexOp(b, loc, slice.getMixedOffsets()[0]);
        MLIRContext *ctx = b.getContext();
        AffineExpr r = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx);
        AffineMap id = AffineMap::get(2, 0, {r, c}, ctx);
        it->second =
            linalg::GenericOp::create(
                b, loc, source,
                ValueRange{it->second, adjoints.lookup(slice.getResult())},
                ValueRange{tensor::EmptyOp::create(b, loc, source.getShape(),
                                                   source.getElementType())},
                llvm::ArrayRef<AffineMap>{id, AffineMap::get(2, 0, {c}, ctx),
                                          id},
                llvm::SmallVector<utils::IteratorType>(
                    2, utils::IteratorType::parallel),
                [&](OpBuilder &nb, Location l, ValueRange args) {
                  Value here = arith::CmpIOp::create(
                      nb, l, arith::CmpIPredicate::eq,
                      linalg::IndexOp::create(nb, l, 0), row);
                  Value added = arith::AddFOp::create(nb, l, args[0], args[1]);
                  linalg::YieldOp::create(nb, l,
                                          ValueRange{arith::SelectOp::create(
                                              nb, l, here, added, args[0])});
                })
                .getResult(0);
        return success();
      }
      Value grad = tensor::InsertSliceOp::create(
          b, loc, adjoints.lookup(slice.getResult()),
          zerosLike(slice.getSource()), slice.getMixedOffsets(),
          slice.getMixedSizes(), slice.getMixedStrides());
      accumulate(slice.getSource(), grad);
      return success();
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      accumulate(expand.getSrc(), tensor::CollapseShapeOp::create(
                                      b, loc, expand.getSrcType(),
                                      adjoints.lookup(expand.getResult()),
                                      expand.getReassociationIndices()));
      return success();
    }
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      accumulate(collapse.getSrc(), tensor::ExpandShapeOp::create(
                                        b, loc, collapse.getSrcType(),
                                        adjoints.lookup(collapse.getResult()),
                                        collapse.getReassociationIndices()));
      return success();
    }
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      Value grad = adjoints.lookup(insert.getResult());
      if (active.contains(insert.getSource()))
        accumulate(insert.getSource(),
                   tensor::ExtractSliceOp::create(
                       b, loc, insert.getSourceType(), grad,
                       insert.getMixedOffsets(), insert.getMixedSizes(),
                       insert.getMixedStrides()));
      if (active.contains(insert.getDest()))
        accumulate(insert.getDest(),
                   tensor::InsertSliceOp::create(
                       b, loc, zerosLike(insert.getSource()), grad,
                       insert.getMixedOffsets(), insert.getMixedSizes(),
                       insert.getMixedStrides()));
      return success();
    }
    return op->emitError() << "reverse differentiation: no rule for '"
                           << op->getName() << "'";
  }

  LogicalResult propagateGeneric(linalg::GenericOp generic) {
    if (generic.getNumResults() != 1)
      return generic.emitError()
             << "reverse differentiation: a generic with "
             << generic.getNumResults() << " results (one is differentiated)";
    Value result = generic.getResult(0);
    Value cotangent = adjoints.lookup(result);
    Value init = generic.getDpsInits()[0];
    AccumulatorUse use = accumulatorUse(generic);
    if (use == AccumulatorUse::Other ||
        (use == AccumulatorUse::None && generic.getNumReductionLoops() > 0))
      return generic.emitError()
             << "reverse differentiation: the body must add to its output or "
                "not read it";
    if (use == AccumulatorUse::Summed && active.contains(init))
      accumulate(init, cotangent);

    llvm::SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    AffineMap outputMap = maps.back();
    unsigned numInputs = generic.getNumDpsInputs();
    for (unsigned i = 0; i < numInputs; ++i) {
      Value input = generic.getDpsInputs()[i];
      if (!active.contains(input))
        continue;
      auto type = cast<RankedTensorType>(input.getType());
      if (!type.getElementType().isF32())
        return generic.emitError()
               << "reverse differentiation: input " << i << " is "
               << type.getElementType() << " (f32 tiles are differentiated)";
      if (!maps[i].isProjectedPermutation())
        return generic.emitError()
               << "reverse differentiation: input " << i << "'s indexing map "
               << AffineMapAttr::get(maps[i])
               << " is not a projection of the loops";
      llvm::SmallVector<utils::IteratorType> iterators(
          generic.getNumLoops(), utils::IteratorType::reduction);
      for (AffineExpr e : maps[i].getResults())
        iterators[cast<AffineDimExpr>(e).getPosition()] =
            utils::IteratorType::parallel;
      llvm::SmallVector<Value> inputs(generic.getDpsInputs());
      inputs.push_back(cotangent);
      llvm::SmallVector<AffineMap> gradMaps(maps.begin(),
                                            maps.begin() + numInputs);
      gradMaps.push_back(outputMap);
      gradMaps.push_back(maps[i]);
      std::string error;
      bool zero = false;
      auto grad = linalg::GenericOp::create(
          b, loc, type, inputs, ValueRange{zerosLike(input)}, gradMaps,
          iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
            BodyTangent body(nb, l, generic);
            FailureOr<Tangent> t =
                body.differentiate(args.take_front(numInputs), i, error);
            Value acc = args.back();
            if (failed(t) || t->isZero()) {
              zero = succeeded(t);
              linalg::YieldOp::create(nb, l, ValueRange{acc});
              return;
            }
            Value dy = args[numInputs];
            Value term =
                t->isOne() ? dy
                           : Value(arith::MulFOp::create(nb, l, dy, t->value));
            linalg::YieldOp::create(
                nb, l, ValueRange{arith::AddFOp::create(nb, l, acc, term)});
          });
      if (!error.empty()) {
        grad.erase();
        return generic.emitError() << "reverse differentiation: " << error;
      }
      if (zero) {
        grad.erase();
        continue;
      }
      accumulate(input, grad.getResult(0));
    }
    return success();
  }

  OpBuilder &b;
  Location loc;
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> adjoints;
};

} // namespace

FailureOr<llvm::SmallVector<Value>> mlir::hla::emitReverseDiff(
    OpBuilder &b, Location loc, llvm::ArrayRef<Operation *> program,
    llvm::ArrayRef<std::pair<Value, Value>> seeds, llvm::ArrayRef<Value> wrt,
    llvm::ArrayRef<ClosedFormVjp> closedForms) {
  ReverseDiff diff(b, loc);
  if (failed(diff.run(program, seeds, wrt, closedForms)))
    return failure();
  llvm::SmallVector<Value> gradients;
  for (Value v : wrt)
    gradients.push_back(diff.gradientOf(v));
  return gradients;
}
