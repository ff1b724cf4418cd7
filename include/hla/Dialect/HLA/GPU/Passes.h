//===- Passes.h - hla's GPU passes ------------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_GPU_PASSES_H
#define HLA_DIALECT_HLA_GPU_PASSES_H

#include "hla/Dialect/HLA/Modes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::hla {

#define GEN_PASS_DECL
#include "hla/Dialect/HLA/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hla/Dialect/HLA/GPU/Passes.h.inc"

/// Memory effects of gpu.launch_func (it reads and writes its buffer
/// operands), so that bufferization's deallocation, which refuses ops of
/// unknown effects, can run after hla-gpu-lower-register-tiles' kernels are
/// outlined.
void registerHLAGPUInterfaceModels(DialectRegistry &registry);

/// Marks the loops hla-gpu-distribute-graph-ops makes of a model graph's
/// ops (and of run-time checks): they are no chunk loops, so the register-
/// tile generator leaves them to hla-gpu-map-chunk-loops even where it must
/// place every chunk loop (generator = tiles).
constexpr llvm::StringLiteral kGraphLoopAttrName = "hla.graph_loop";

} // namespace mlir::hla

#endif // HLA_DIALECT_HLA_GPU_PASSES_H
