//===- FinalizeKernels.cpp - Kernel attributes after lowering ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-finalize-kernels patches the LLVM global that
// gpu.dynamic_shared_memory lowers to (external, 1024-byte aligned) and sets
// the kernels' occupancy hint (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#define DEBUG_TYPE "hla-gpu-finalize-kernels"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPUFINALIZEKERNELSPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct HLAGPUFinalizeKernelsPass
    : public hla::impl::HLAGPUFinalizeKernelsPassBase<
          HLAGPUFinalizeKernelsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      if (func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) &&
          !func->hasAttr(NVVM::NVVMDialect::getMinctasmAttrName()))
        func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                      IntegerAttr::get(IntegerType::get(ctx, 32), 1));
    });
    getOperation().walk([&](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (!array || array.getNumElements() != 0 ||
          global.getAddrSpace() !=
              static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared))
        return;
      global.setLinkage(LLVM::Linkage::External);
      global.setAlignment(1024);
    });
  }
};

} // namespace
