//===- LowerAsyncCopies.cpp - nvgpu async copies to NVVM --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-lower-async-copies lowers the nvgpu.device_async_copy ops that
// hla-gpu-lower-register-tiles emits (token rows copied a chunk ahead) to
// nvvm.cp.async, with the kernels' index bitwidth: upstream's
// convert-nvgpu-to-nvvm has no such option, and its 64-bit buffer
// descriptors do not meet convert-gpu-to-nvvm's 32-bit ones.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPULOWERASYNCCOPIESPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

struct HLAGPULowerAsyncCopiesPass
    : public hla::impl::HLAGPULowerAsyncCopiesPassBase<
          HLAGPULowerAsyncCopiesPass> {
  using HLAGPULowerAsyncCopiesPassBase::HLAGPULowerAsyncCopiesPassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    LowerToLLVMOptions options(ctx);
    if (indexBitwidth != 0)
      options.overrideIndexBitwidth(indexBitwidth);
    LLVMTypeConverter converter(ctx, options);
    // gpu's address spaces as NVVM's numbered ones.
    populateGpuMemorySpaceAttributeConversions(
        converter, [](gpu::AddressSpace space) -> unsigned {
          switch (space) {
          case gpu::AddressSpace::Global:
            return static_cast<unsigned>(NVVM::NVVMMemorySpace::Global);
          case gpu::AddressSpace::Workgroup:
            return static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);
          case gpu::AddressSpace::Private:
            return 0;
          }
          llvm_unreachable("unknown address space");
        });
    // The copies' tokens (unused: the kernels wait on whole groups).
    converter.addConversion([ctx](nvgpu::DeviceAsyncTokenType) -> Type {
      return IntegerType::get(ctx, 32);
    });
    RewritePatternSet patterns(ctx);
    populateNVGPUToNVVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*ctx);
    target.addLegalDialect<NVVM::NVVMDialect>();
    target.addIllegalDialect<nvgpu::NVGPUDialect>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
