//===- RunTimeChecks.cpp - Checks of operand values at run time -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RunTimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

void mlir::hla::emitRunTimeChecks(
    OpBuilder &b, Location loc, ValueRange operands,
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange, Value)>
        brokenBits,
    llvm::ArrayRef<RunTimeRule> rules) {
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  };
  Value zero =
      linalg::FillOp::create(b, loc, constant(0),
                             Value(tensor::EmptyOp::create(
                                 b, loc, llvm::ArrayRef<int64_t>{}, i64)))
          .getResult(0);
  MLIRContext *ctx = b.getContext();
  llvm::SmallVector<AffineMap> maps(operands.size(),
                                    AffineMap::getMultiDimIdentityMap(1, ctx));
  maps.push_back(AffineMap::get(1, 0, {}, ctx));
  auto reduce = linalg::GenericOp::create(
      b, loc, zero.getType(), operands, ValueRange{zero}, maps,
      llvm::ArrayRef<utils::IteratorType>{utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value bits = brokenBits(nb, l, args.drop_back(),
                                linalg::IndexOp::create(nb, l, 0));
        linalg::YieldOp::create(
            nb, l, Value(arith::OrIOp::create(nb, l, args.back(), bits)));
      });
  Value code = tensor::ExtractOp::create(b, loc, reduce.getResult(0));
  for (const RunTimeRule &rule : rules) {
    Value broken = arith::AndIOp::create(b, loc, code, constant(rule.bit));
    cf::AssertOp::create(b, loc,
                         arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               broken, constant(0)),
                         rule.message);
  }
}
