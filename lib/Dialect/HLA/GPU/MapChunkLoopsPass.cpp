//===- MapChunkLoopsPass.cpp - Chunk loops as GPU thread blocks -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-map-chunk-loops turns the bufferized fused chunked form
//
//   scf.forall (%seq, %head) in (N, H) {      // one (sequence, head)
//     %S = memref.alloc() : memref<64x64xf32> // carried state, tiles
//     scf.for %chunk ... {
//       linalg.generic ... ins(...) outs(...) // chunk math on tiles
//       memref.copy ...                        // token tiles in, rows out
//     }
//   }
//
// into a gpu.launch whose thread blocks are the forall's iterations. The
// body becomes one thread block's program: its buffers live in dynamic
// shared memory (packed by lifetime), every linalg op and copy is shared
// out over the block's threads between barriers, and scalar code runs in
// every thread. This is the straightforward SIMT schedule of the chunked
// form; tensor-core contractions replace the distributed reductions in a
// later step.
//
// This file is the pass (host-side preparation, then one ChunkLoopMapper
// per loop); ChunkLoopMapper.h lists the steps' files.
//
//===----------------------------------------------------------------------===//

#include "ChunkLoopMapper.h"

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "hla-gpu-map-chunk-loops"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPUMAPCHUNKLOOPSPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

namespace {

struct HLAGPUMapChunkLoopsPass
    : public hla::impl::HLAGPUMapChunkLoopsPassBase<HLAGPUMapChunkLoopsPass> {
  using HLAGPUMapChunkLoopsPassBase::HLAGPUMapChunkLoopsPassBase;

  /// `auto`: tensor cores (bf16 operands) when the loop reads 16-bit float
  /// data from outside — the op's precision is then 16-bit and rounding its
  /// chunk intermediates to bf16 stays within it; float32 ops keep exact
  /// float32 arithmetic.
  bool useTensorCores(scf::ForallOp forall) {
    if (tensorCores == AutoSwitch::On)
      return true;
    if (tensorCores == AutoSwitch::Off)
      return false;
    bool halfInputs = false;
    forall.getBody()->walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (auto type = dyn_cast<MemRefType>(operand.getType()))
          if (!forall.getRegion().isAncestor(operand.getParentRegion()) &&
              (type.getElementType().isBF16() || type.getElementType().isF16()))
            halfInputs = true;
    });
    return halfInputs;
  }

  /// Buffers of the function body (what one chunk loop leaves for the next,
  /// e.g. the segmented form's segment summaries) are only touched by
  /// kernels: they become device allocations, stream-ordered on the stream
  /// the launches use.
  void moveBuffersToDevice() {
    Block &body = getOperation().getBody().front();
    for (auto alloc :
         llvm::make_early_inc_range(body.getOps<memref::AllocOp>())) {
      OpBuilder b(alloc);
      Location loc = alloc.getLoc();
      Value device =
          allocOnStream(b, loc, alloc.getType(), alloc.getDynamicSizes(),
                        alloc.getSymbolOperands());
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
        auto dealloc = dyn_cast<memref::DeallocOp>(user);
        if (!dealloc)
          continue;
        OpBuilder d(dealloc);
        freeOnStream(d, loc, device);
        dealloc.erase();
      }
      alloc.replaceAllUsesWith(device);
      alloc.erase();
    }
  }

  /// A constant buffer the host hands on (to a call: e.g. a layer's Ω from
  /// hla.random_features) is copied to device memory first; loops read
  /// constants directly (their kernels carry the global).
  void copyGlobalsToDevice() {
    func::FuncOp func = getOperation();
    Block &body = func.getBody().front();
    for (auto global :
         llvm::make_early_inc_range(body.getOps<memref::GetGlobalOp>())) {
      llvm::SmallVector<OpOperand *> hostUses;
      for (OpOperand &use : global->getUses())
        if (!use.getOwner()->getParentOfType<scf::ForallOp>())
          hostUses.push_back(&use);
      auto type = cast<MemRefType>(global.getType());
      if (hostUses.empty() || !type.hasStaticShape())
        continue;
      OpBuilder b(global);
      b.setInsertionPointAfter(global);
      Location loc = global.getLoc();
      Value device = allocOnStream(b, loc, type);
      copyOnStream(b, loc, device, global.getResult(), /*hostReads=*/false);
      for (OpOperand *use : hostUses)
        use->set(device);
      for (Block &block : func.getBody())
        if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator())) {
          OpBuilder d(ret);
          freeOnStream(d, loc, device);
        }
    }
  }

  /// Copies of the function body become device work: whole buffers (a
  /// call's result into the caller's output buffer) a device-to-device copy
  /// on the stream, others (a slice handed to a call) a one-block loop that
  /// hla-gpu-map-chunk-loops turns into a kernel.
  void copyOnDevice() {
    Block &body = getOperation().getBody().front();
    for (auto copy :
         llvm::make_early_inc_range(body.getOps<memref::CopyOp>())) {
      auto from = cast<MemRefType>(copy.getSource().getType());
      auto to = cast<MemRefType>(copy.getTarget().getType());
      if (from != to || !from.getLayout().isIdentity() ||
          !from.hasStaticShape()) {
        OpBuilder b(copy);
        MLIRContext *ctx = b.getContext();
        auto loop = scf::ForallOp::create(
            b, copy.getLoc(), llvm::ArrayRef<OpFoldResult>{b.getIndexAttr(1)},
            ValueRange(),
            ArrayAttr::get(ctx, {gpu::GPUBlockMappingAttr::get(
                                    ctx, gpu::MappingId::DimX)}));
        copy->moveBefore(loop.getTerminator());
        continue;
      }
      OpBuilder b(copy);
      copyOnStream(b, copy.getLoc(), copy.getTarget(), copy.getSource(),
                   /*hostReads=*/false);
      copy.erase();
    }
  }

  /// A scalar the host reads from a 0-d buffer (a run-time check's
  /// operand, e.g. the range of token ids) is copied to the host first.
  void stageScalarReads() {
    Block &body = getOperation().getBody().front();
    for (auto load :
         llvm::make_early_inc_range(body.getOps<memref::LoadOp>())) {
      auto type = load.getMemRefType();
      if (type.getRank() != 0 || !type.getLayout().isIdentity())
        continue;
      OpBuilder b(load);
      Location loc = load.getLoc();
      Value host = memref::AllocaOp::create(
          b, loc, MemRefType::get({}, type.getElementType()));
      copyOnStream(b, loc, host, load.getMemRef(), /*hostReads=*/true);
      load->setOperand(0, host);
    }
  }

  void runOnOperation() override {
    if (mma == MmaInstruction::Auto) {
      getOperation().emitError()
          << "hla-gpu-map-chunk-loops: mma must be mma.sync or wgmma (auto "
             "is resolved by hla-cuda-pipeline for its chip)";
      return signalPassFailure();
    }
    if (blockThreads < 32 || blockThreads > 1024 || blockThreads % 32 != 0) {
      getOperation().emitError()
          << "hla-gpu-map-chunk-loops: block-threads must be a multiple of 32 "
             "between 32 and 1024, got "
          << int64_t(blockThreads);
      return signalPassFailure();
    }
    stageScalarReads();
    copyOnDevice();
    copyGlobalsToDevice();
    // Everything but the chunk loops runs on the host, where the buffers
    // (device memory) must not be touched.
    WalkResult host =
        getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
          if (isa<scf::ForallOp>(op))
            return WalkResult::skip();
          // Allocations, copies and waits of the gpu dialect are device work.
          if (isa<gpu::GPUDialect>(op->getDialect()))
            return WalkResult::advance();
          auto effects = dyn_cast<MemoryEffectOpInterface>(op);
          bool touchesBuffers = isa<linalg::LinalgOp, memref::CopyOp>(op) ||
                                (effects &&
                                 (effects.hasEffect<MemoryEffects::Read>() ||
                                  effects.hasEffect<MemoryEffects::Write>()) &&
                                 llvm::any_of(op->getOperands(), [](Value v) {
                                   // Host stack buffers (staged scalars) are
                                   // the host's own.
                                   return isa<MemRefType>(v.getType()) &&
                                          !v.getDefiningOp<memref::AllocaOp>();
                                 }));
          if (!touchesBuffers)
            return WalkResult::advance();
          op->emitOpError("hla-gpu-map-chunk-loops: this op would run on the "
                          "host over device memory (on the GPU run: loops, "
                          "linalg ops via hla-gpu-distribute-graph-ops, copies "
                          "and reads of single values)");
          return WalkResult::interrupt();
        });
    if (host.wasInterrupted())
      return signalPassFailure();
    moveBuffersToDevice();
    llvm::SmallVector<scf::ForallOp> loops;
    for (Operation &op : getOperation().getBody().getOps())
      if (auto forall = dyn_cast<scf::ForallOp>(op))
        loops.push_back(forall);
    for (scf::ForallOp forall : loops)
      if (failed(ChunkLoopMapper(forall, blockThreads, maxSharedMemory,
                                 useTensorCores(forall),
                                 mma == MmaInstruction::Wgmma, tma, tmaPrefetch)
                     .run()))
        return signalPassFailure();
  }
};

} // namespace
