//===- MatmulsToCublas.cpp - Graph matrix products on cuBLAS ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-matmuls-to-cublas: linalg.matmul / linalg.batch_matmul on device
// buffers become calls of the CUDA runtime's hla_cuda_gemm (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "../Transforms/TransformUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#define DEBUG_TYPE "hla-gpu-matmuls-to-cublas"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPUMATMULSTOCUBLASPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// The runtime's element codes (lib/Runtime/hla_runtime.h).
static std::optional<int32_t> elementCode(Type type) {
  if (type.isF32())
    return 0;
  if (type.isF16())
    return 1;
  if (type.isBF16())
    return 2;
  return std::nullopt;
}

struct HLAGPUMatmulsToCublasPass
    : public hla::impl::HLAGPUMatmulsToCublasPassBase<
          HLAGPUMatmulsToCublasPass> {
  /// (address, row stride, column stride, batch stride) of a 2-D or 3-D
  /// operand, in elements except the byte address, as i64.
  llvm::SmallVector<Value> describe(OpBuilder &b, Location loc, Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    auto i64 = b.getI64Type();
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, meta.getBaseBuffer());
    int64_t bytes = type.getElementTypeBitWidth() / 8;
    Value offset =
        arith::MulIOp::create(b, loc, meta.getOffset(),
                              arith::ConstantIndexOp::create(b, loc, bytes));
    auto toI64 = [&](Value v) -> Value {
      return arith::IndexCastOp::create(b, loc, i64, v);
    };
    llvm::SmallVector<Value> out = {
        toI64(arith::AddIOp::create(b, loc, base, offset))};
    ValueRange strides = meta.getStrides();
    int64_t rank = type.getRank();
    out.push_back(toI64(strides[rank - 2]));
    out.push_back(toI64(strides[rank - 1]));
    out.push_back(rank == 3 ? toI64(strides[0])
                            : arith::ConstantIntOp::create(b, loc, i64, 0));
    return out;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    llvm::SmallVector<linalg::LinalgOp> products;
    for (Operation &op : func.getBody().front())
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        products.push_back(cast<linalg::LinalgOp>(op));
    if (products.empty())
      return;
    auto module = func->getParentOfType<ModuleOp>();
    OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
    Type i32 = top.getI32Type(), i64 = top.getI64Type();
    // (dtype, batch, M, N, K, then address and three strides of A, B, C).
    llvm::SmallVector<Type> params = {i32, i64, i64, i64, i64};
    params.append(12, i64);
    auto fnType = top.getFunctionType(params, {});
    if (!module.lookupSymbol<func::FuncOp>("hla_cuda_gemm")) {
      auto decl =
          func::FuncOp::create(top, module.getLoc(), "hla_cuda_gemm", fnType);
      decl.setPrivate();
    }
    for (linalg::LinalgOp op : products) {
      if (!op.hasPureBufferSemantics()) {
        op->emitOpError("hla-gpu-matmuls-to-cublas: expected buffers");
        return signalPassFailure();
      }
      if (!isCublasProduct(op)) {
        op->emitOpError("hla-gpu-matmuls-to-cublas: cuBLAS runs products of "
                        "f32, f16 or bf16 operands of one element type with "
                        "the ops' default maps");
        return signalPassFailure();
      }
      Value A = op.getDpsInputOperand(0)->get();
      Value C = op.getDpsInitOperand(0)->get();
      int32_t code =
          *elementCode(cast<MemRefType>(C.getType()).getElementType());
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto cType = cast<MemRefType>(C.getType());
      auto aType = cast<MemRefType>(A.getType());
      int64_t rank = cType.getRank();
      auto dim = [&](Value buffer, int64_t d) -> Value {
        return arith::IndexCastOp::create(
            b, loc, i64, memref::DimOp::create(b, loc, buffer, d));
      };
      llvm::SmallVector<Value> operands = {
          arith::ConstantIntOp::create(b, loc, i32, code),
          rank == 3 ? dim(C, 0) : arith::ConstantIntOp::create(b, loc, i64, 1),
          dim(C, rank - 2), dim(C, rank - 1), dim(A, aType.getRank() - 1)};
      for (Value buffer : {A, op.getDpsInputOperand(1)->get(), C})
        llvm::append_range(operands, describe(b, loc, buffer));
      func::CallOp::create(b, loc, "hla_cuda_gemm", TypeRange{}, operands);
      op->erase();
    }
  }
};

} // namespace
