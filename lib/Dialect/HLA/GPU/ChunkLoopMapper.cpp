//===- ChunkLoopMapper.cpp - One chunk loop as a gpu.launch -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The mapper's driver: checks the loop, creates the launch with one thread
// block per iteration, generalizes the named ops, and runs the steps (TMA
// loads, tensor cores, shared memory, distribution over the threads) in
// order.
//
//===----------------------------------------------------------------------===//

#include "ChunkLoopMapper.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

namespace {

/// Drops barriers with nothing but side-effect-free ops between them and
/// the previous barrier of their block.
static void removeRedundantBarriers(Region &region) {
  region.walk([](Block *block) {
    // At a block's start the state is unknown (a loop's back edge).
    bool touched = true;
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (isa<gpu::BarrierOp>(op)) {
        if (!touched)
          op.erase();
        touched = false;
        continue;
      }
      if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
        touched = true;
    }
  });
}

} // namespace

LogicalResult ChunkLoopMapper::checkForall() {
  if (!forall.getOutputs().empty())
    return forall.emitOpError(
        "hla-gpu-map-chunk-loops: expected a bufferized loop (no shared "
        "outputs)");
  for (auto [lb, ub, step] :
       llvm::zip(forall.getMixedLowerBound(), forall.getMixedUpperBound(),
                 forall.getMixedStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *l != 0 || *s != 1)
      return forall.emitOpError(
          "hla-gpu-map-chunk-loops: expected static bounds from 0, step 1");
  }
  // Constant buffers (tensor constants, e.g. a decay that is known at
  // compile time) are read through memref.get_global: the global goes to
  // the kernel module with the kernel, so the read moves into the body.
  Region &body = forall.getRegion();
  llvm::SmallVector<OpOperand *> globalUses;
  forall.getBody()->walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands())
      if (auto global = use.get().getDefiningOp<memref::GetGlobalOp>())
        if (!body.isAncestor(global->getParentRegion()))
          globalUses.push_back(&use);
  });
  for (OpOperand *use : globalUses) {
    OpBuilder b = OpBuilder::atBlockBegin(forall.getBody());
    use->set(b.clone(*use->get().getDefiningOp())->getResult(0));
  }

  // A kernel can take function arguments (buffers in device memory, and
  // scalars), device buffers and constants from outside; anything else
  // would be host data.
  WalkResult walk = forall.getBody()->walk([&](Operation *op) {
    for (Value operand : op->getOperands()) {
      if (body.isAncestor(operand.getParentRegion()))
        continue;
      if (auto arg = dyn_cast<BlockArgument>(operand))
        if (isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
          continue;
      // Views of device buffers (reshapes, casts, subviews made on the
      // host) are descriptors of device memory too.
      Value root = operand;
      while (Operation *view = root.getDefiningOp()) {
        auto viewLike = dyn_cast<ViewLikeOpInterface>(view);
        if (!viewLike || !isa<MemRefType>(root.getType()))
          break;
        root = viewLike.getViewSource();
      }
      if (auto arg = dyn_cast<BlockArgument>(root))
        if (isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
          continue;
      Operation *def = root.getDefiningOp();
      if (def &&
          (def->hasTrait<OpTrait::ConstantLike>() || isa<gpu::AllocOp>(def)))
        continue;
      op->emitOpError("hla-gpu-map-chunk-loops: the chunk loop reads a value "
                      "computed outside it")
              .attachNote(operand.getLoc())
          << "defined here; a GPU kernel can only take function arguments, "
             "device buffers and constants";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

gpu::LaunchOp ChunkLoopMapper::createLaunch() {
  OpBuilder b(forall);
  Location loc = forall.getLoc();
  llvm::SmallVector<int64_t> bounds;
  int64_t blocks = 1;
  for (OpFoldResult ub : forall.getMixedUpperBound()) {
    bounds.push_back(*getConstantIntValue(ub));
    blocks *= bounds.back();
  }
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value one = index(1);
  Value sharedBytes = arith::ConstantIntOp::create(b, loc, 0, 32);
  auto launch = gpu::LaunchOp::create(b, loc, index(blocks), one, one,
                                      index(threads), one, one, sharedBytes);
  Block &entry = launch.getBody().front();
  b.setInsertionPointToStart(&entry);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&entry);

  // The forall's induction variables, row-major from the block index.
  Value linear = launch.getBlockIds().x;
  llvm::SmallVector<Value> ivs(bounds.size());
  for (size_t d = bounds.size(); d-- > 0;) {
    if (d == 0) {
      ivs[d] = linear;
      break;
    }
    Value size = index(bounds[d]);
    ivs[d] = arith::RemUIOp::create(b, loc, linear, size);
    linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  threadId = launch.getThreadIds().x;
  numThreads = launch.getBlockSizeX();

  // Move the body over.
  Block *body = forall.getBody();
  for (auto [arg, iv] : llvm::zip(body->getArguments(), ivs))
    arg.replaceAllUsesWith(iv);
  Operation *terminator = entry.getTerminator();
  for (Operation &op : llvm::make_early_inc_range(body->without_terminator()))
    op.moveBefore(terminator);
  return launch;
}

void ChunkLoopMapper::guardScalarStore(memref::StoreOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  barrierBefore(op);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, threadId, zero);
  auto guard = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  op->moveBefore(guard.thenBlock()->getTerminator());
  barrierAfter(guard);
}

LogicalResult ChunkLoopMapper::generalize(gpu::LaunchOp launch) {
  llvm::SmallVector<Operation *> named;
  launch.getBody().walk([&](Operation *op) {
    if (isa<memref::CopyOp>(op) ||
        (isa<linalg::LinalgOp>(op) && !isa<linalg::GenericOp>(op)))
      named.push_back(op);
  });
  IRRewriter rewriter(launch.getContext());
  for (Operation *op : named) {
    if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      rewriter.setInsertionPoint(copy);
      auto linalgCopy = linalg::CopyOp::create(
          rewriter, copy.getLoc(), copy.getSource(), copy.getTarget());
      rewriter.eraseOp(copy);
      op = linalgCopy;
    }
    rewriter.setInsertionPoint(op);
    if (failed(linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(op))))
      return op->emitOpError("hla-gpu-map-chunk-loops: cannot generalize");
  }
  return success();
}

LogicalResult ChunkLoopMapper::distribute(gpu::LaunchOp launch) {
  llvm::SmallVector<linalg::GenericOp> generics;
  llvm::SmallVector<memref::StoreOp> stores;
  launch.getBody().walk([&](Operation *op) {
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      generics.push_back(g);
    else if (auto s = dyn_cast<memref::StoreOp>(op))
      stores.push_back(s);
  });
  // Stores that are not inside a generic are scalar updates of the block's
  // program (tensor.from_elements, tensor.insert).
  for (memref::StoreOp s : stores)
    guardScalarStore(s);
  // Tensor-core contractions first, with what they absorb.
  llvm::DenseSet<Operation *> absorbed;
  for (TensorCorePlan &plan : tensorCorePlans) {
    absorbed.insert(plan.contraction);
    if (plan.epilogue)
      absorbed.insert(plan.epilogue);
    if (plan.stageA)
      lowerContractionToWgmma(plan.contraction, plan.zeroInit, plan.epilogue,
                              plan.stageA, plan.stageB);
    else
      lowerContractionToMma(plan.contraction, plan.zeroInit, plan.epilogue);
  }
  for (linalg::GenericOp g : generics) {
    if (absorbed.contains(g))
      continue;
    if (failed(distributeGeneric(g)))
      return failure();
  }
  return success();
}

LogicalResult ChunkLoopMapper::run() {
  if (failed(checkForall()))
    return failure();
  if (tma)
    planTmaLoads();
  gpu::LaunchOp launch = createLaunch();
  forall.erase();
  lowerTmaLoads(launch);
  if (failed(generalize(launch)))
    return failure();
  planTensorCores(launch);
  if (failed(placeInSharedMemory(launch)) || failed(distribute(launch)))
    return failure();
  removeRedundantBarriers(launch.getBody());
  return success();
}
