//===- QueueLaunches.cpp - Launches that the host does not wait for -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-queue-launches (Passes.td): synchronous kernel launches become
// asynchronous ones on hla's stream, with no wait after them.
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPUQUEUELAUNCHESPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;

namespace {

struct HLAGPUQueueLaunchesPass
    : public hla::impl::HLAGPUQueueLaunchesPassBase<HLAGPUQueueLaunchesPass> {
  void runOnOperation() override {
    llvm::SmallVector<gpu::LaunchFuncOp> launches;
    getOperation().walk([&](gpu::LaunchFuncOp launch) {
      if (!launch.getAsyncToken())
        launches.push_back(launch);
    });
    auto tokenType = gpu::AsyncTokenType::get(&getContext());
    for (gpu::LaunchFuncOp launch : launches) {
      OpBuilder b(launch);
      Location loc = launch.getLoc();
      // The stream: every `gpu.wait async` gets hla's one stream.
      Value stream =
          gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
      std::optional<gpu::KernelDim3> cluster;
      if (launch.hasClusterSize())
        cluster = launch.getClusterSizeOperandValues();
      auto queued = gpu::LaunchFuncOp::create(
          b, loc, launch.getKernelAttr(), launch.getGridSizeOperandValues(),
          launch.getBlockSizeOperandValues(),
          launch.getDynamicSharedMemorySize(), launch.getKernelOperands(),
          tokenType, ValueRange{stream}, cluster);
      queued->setDiscardableAttrs(launch->getDiscardableAttrDictionary());
      launch.erase();
    }
  }
};

} // namespace
