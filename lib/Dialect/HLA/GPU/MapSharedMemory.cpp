//===- MapSharedMemory.cpp - Buffers in dynamic shared memory ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A block's buffers move to dynamic shared memory, packed by lifetime
// (program order of first and last use); those that do not fit stay in
// device memory, one slice per block.
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
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

/// The position of every op under `root` in a pre-order walk, and the
/// position of the last op nested in it.
struct ProgramOrder {
  llvm::DenseMap<Operation *, int64_t> begin, end;

  explicit ProgramOrder(Operation *root) {
    int64_t counter = 0;
    root->walk<WalkOrder::PreOrder>(
        [&](Operation *op) { begin[op] = counter++; });
    root->walk<WalkOrder::PostOrder>([&](Operation *op) {
      int64_t last = begin[op];
      for (Region &r : op->getRegions())
        for (Block &b : r)
          for (Operation &nested : b)
            last = std::max(last, end[&nested]);
      end[op] = last;
    });
  }
};

/// Every user of `value`, through view-like ops.
static void collectUsers(Value value, llvm::SmallVectorImpl<Operation *> &out) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    out.push_back(user);
    if (isa<ViewLikeOpInterface>(user))
      for (Value result : user->getResults())
        collectUsers(result, out);
  }
}

/// Moves the results of view-like users of `value` (recursively) to
/// workgroup memory, now that `value` is there.
static LogicalResult retypeViews(Value value) {
  for (Operation *user : value.getUsers()) {
    if (!isa<ViewLikeOpInterface>(user))
      continue;
    if (!isa<memref::SubViewOp, memref::CastOp, memref::ExpandShapeOp,
             memref::CollapseShapeOp, memref::ReinterpretCastOp>(user))
      return user->emitOpError(
          "hla-gpu-map-chunk-loops: cannot move this view of a chunk buffer "
          "to shared memory");
    if (auto subview = dyn_cast<memref::SubViewOp>(user)) {
      // The source may now have padded rows: the view's strides follow.
      auto sourceType = cast<MemRefType>(subview.getSource().getType());
      auto inferred = memref::SubViewOp::inferRankReducedResultType(
          subview.getType().getShape(), sourceType, subview.getMixedOffsets(),
          subview.getMixedSizes(), subview.getMixedStrides());
      subview.getResult().setType(cast<MemRefType>(inferred));
      if (failed(retypeViews(subview.getResult())))
        return failure();
      continue;
    }
    // Reshapes of a view whose strides changed take strided layouts too
    // (KDA's reverse pass reshapes its tiles into blocks of 16 rows).
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(user)) {
      FailureOr<MemRefType> inferred =
          memref::ExpandShapeOp::computeExpandedType(
              expand.getSrcType(), expand.getResultType().getShape(),
              expand.getReassociationIndices());
      if (failed(inferred))
        return user->emitOpError(
            "hla-gpu-map-chunk-loops: cannot reshape this view of a chunk "
            "buffer in shared memory");
      expand.getResult().setType(*inferred);
      if (failed(retypeViews(expand.getResult())))
        return failure();
      continue;
    }
    if (auto collapse = dyn_cast<memref::CollapseShapeOp>(user)) {
      MemRefType source = collapse.getSrcType();
      if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
              source, collapse.getReassociationIndices()))
        return user->emitOpError(
            "hla-gpu-map-chunk-loops: cannot collapse this view of a chunk "
            "buffer in shared memory (its rows are padded)");
      collapse.getResult().setType(
          memref::CollapseShapeOp::computeCollapsedType(
              source, collapse.getReassociationIndices()));
      if (failed(retypeViews(collapse.getResult())))
        return failure();
      continue;
    }
    for (Value result : user->getResults()) {
      auto type = dyn_cast<MemRefType>(result.getType());
      if (!type)
        continue;
      result.setType(inWorkgroup(type));
      if (failed(retypeViews(result)))
        return failure();
    }
  }
  return success();
}

LogicalResult ChunkLoopMapper::placeInSharedMemory(gpu::LaunchOp launch) {
  Block &entry = launch.getBody().front();
  llvm::SmallVector<memref::AllocOp> allocs;
  launch.getBody().walk([&](memref::AllocOp op) { allocs.push_back(op); });

  ProgramOrder order(launch);
  struct Interval {
    memref::AllocOp alloc;
    int64_t first, last, bytes, offset = -1;
    /// Elements per row in shared memory (more than the tile's columns when
    /// the rows are padded), or 0 for an unpadded buffer.
    int64_t paddedRow = 0;
    /// In the block's slice of a device-memory scratch buffer instead.
    bool global = false;
    /// A wgmma operand's staging buffer: shared memory only.
    bool staging = false;
  };
  llvm::SmallVector<Interval> intervals;
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return alloc.emitOpError("hla-gpu-map-chunk-loops: chunk buffers must "
                               "have a static shape and identity layout");
    // A buffer lives from its allocation to its last use, where a use
    // nested in a loop that the allocation is outside of counts as the
    // whole loop (the next iteration reads it again).
    Block *home = alloc->getBlock();
    int64_t first = order.begin[alloc], last = first;
    llvm::SmallVector<Operation *> users;
    collectUsers(alloc.getResult(), users);
    for (Operation *user : users) {
      if (isa<memref::DeallocOp>(user))
        continue;
      Operation *anchor = home->findAncestorOpInBlock(*user);
      if (!anchor)
        return user->emitOpError("hla-gpu-map-chunk-loops: a chunk buffer is "
                                 "used outside the block that allocates it");
      last = std::max(last, order.end[anchor]);
    }
    // wgmma's staging buffers are only used by the contraction's lowering
    // (made later): they live until the contraction and its epilogue end,
    // and must be in shared memory (wgmma reads operands from there).
    bool staging = false;
    for (TensorCorePlan &plan : tensorCorePlans)
      if (plan.stageA == alloc.getResult() ||
          plan.stageB == alloc.getResult()) {
        staging = true;
        Operation *lastOp = plan.epilogue ? plan.epilogue.getOperation()
                                          : plan.contraction.getOperation();
        last = std::max(last, order.end[lastOp]);
      }
    Interval interval{alloc, first, last, byteSize(type)};
    interval.staging = staging || sharedOnly.contains(alloc);
    // Tiles whose rows are a multiple of 128 bytes would put a column's
    // elements in one shared-memory bank: the column reads of transposed
    // operands and of mma fragments would serialise. 16 bytes of padding
    // per row spread them over all banks.
    int64_t elementBytes = type.getElementTypeBitWidth() / 8;
    if (type.getRank() == 2 && elementBytes > 0 &&
        (type.getDimSize(1) * elementBytes) % 128 == 0 &&
        llvm::all_of(users, [](Operation *user) {
          return isa<memref::DeallocOp, memref::LoadOp, memref::StoreOp,
                     memref::CopyOp, linalg::LinalgOp, memref::SubViewOp>(user);
        })) {
      interval.paddedRow = type.getDimSize(1) + 16 / elementBytes;
      interval.bytes = type.getDimSize(0) * interval.paddedRow * elementBytes;
    }
    intervals.push_back(interval);
  }

  // First fit, largest buffers first, against the buffers already placed
  // whose lifetimes overlap. Padded rows when they fit, packed ones else.
  // `global` selects which buffers are placed (shared or scratch memory).
  auto place = [&](bool padded, bool global = false) {
    for (Interval &i : intervals)
      i.bytes = padded && i.paddedRow
                    ? i.alloc.getType().getDimSize(0) * i.paddedRow *
                          (i.alloc.getType().getElementTypeBitWidth() / 8)
                    : byteSize(i.alloc.getType());
    llvm::SmallVector<Interval *> bySize;
    for (Interval &i : intervals)
      if (i.global == global)
        bySize.push_back(&i);
    llvm::sort(bySize, [](Interval *a, Interval *b) {
      return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
    });
    int64_t end = 0;
    llvm::SmallVector<Interval *> placed;
    for (Interval *cur : bySize) {
      llvm::SmallVector<std::pair<int64_t, int64_t>> busy;
      for (Interval *p : placed)
        if (p->first <= cur->last && cur->first <= p->last)
          busy.push_back({p->offset, p->offset + p->bytes});
      llvm::sort(busy);
      int64_t offset = 0;
      for (auto [lo, hi] : busy) {
        if (offset + cur->bytes <= lo)
          break;
        offset = std::max<int64_t>(offset, llvm::alignTo(hi, kSharedAlignment));
      }
      cur->offset = offset;
      end = std::max(end, offset + cur->bytes);
      placed.push_back(cur);
    }
    return end;
  };
  int64_t total = place(/*padded=*/true);
  if (total > maxShared) {
    total = place(/*padded=*/false);
    for (Interval &i : intervals)
      i.paddedRow = 0;
  }
  // Still too much (large states: hla2 at d = 128): the largest buffers go
  // to the block's slice of a scratch buffer in device memory, slower but
  // the kernel runs.
  int64_t requested = total, scratch = 0;
  while (total > maxShared) {
    Interval *largest = nullptr;
    for (Interval &i : intervals)
      if (!i.global && !i.staging &&
          (!largest ||
           byteSize(i.alloc.getType()) > byteSize(largest->alloc.getType())))
        largest = &i;
    if (!largest)
      break;
    largest->global = true;
    total = place(/*padded=*/false);
  }
  if (total > maxShared)
    return launch.emitOpError("hla-gpu-map-chunk-loops: the chunk loop needs ")
           << requested << " bytes of shared memory for its tiles and state, "
           << "more than the " << maxShared
           << " a thread block may use (use a smaller chunk size)";
  if (llvm::any_of(intervals, [](const Interval &i) { return i.global; }))
    scratch = llvm::alignTo(place(/*padded=*/false, /*global=*/true), 256);

  OpBuilder b(&entry, entry.begin());
  Location loc = launch.getLoc();
  auto window = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                      workgroupSpace(b.getContext())));
  // The scratch buffer: `scratch` bytes per block, allocated on the
  // launches' stream around the launch.
  Value scratchBuffer, scratchBase;
  if (scratch) {
    std::optional<int64_t> blocks = getConstantIntValue(launch.getGridSizeX());
    if (!blocks)
      return launch.emitOpError(
          "hla-gpu-map-chunk-loops: a device-memory scratch buffer needs a "
          "static number of blocks");
    // Each block's slice starts at blockIdx.x · scratch, computed with the
    // kernels' (32-bit) indices: past 2³¹ bytes the slices would wrap onto
    // each other (KDA's backward with parallel gradients at 8x16x8192 gave
    // gradients 40x off on an H100, 2026-12-06).
    if (*blocks * scratch > std::numeric_limits<int32_t>::max())
      return launch.emitOpError("hla-gpu-map-chunk-loops: ")
             << *blocks << " blocks of " << scratch
             << " bytes of device-memory scratch exceed the 2^31 bytes the "
                "kernels' 32-bit indices address (fewer blocks, e.g. without "
                "parallel gradients, or a smaller chunk size)";
    OpBuilder host(launch);
    // Recorded for the schedule choice (hla.device_scratch: state streamed
    // through device memory).
    launch->getParentOfType<func::FuncOp>()->setAttr("hla.device_scratch",
                                                     host.getUnitAttr());
    scratchBuffer = allocOnStream(
        host, loc, MemRefType::get({*blocks * scratch}, host.getI8Type()));
    host.setInsertionPointAfter(launch);
    freeOnStream(host, loc, scratchBuffer);
    scratchBase =
        arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                              arith::ConstantIndexOp::create(b, loc, scratch));
  }
  for (Interval &i : intervals) {
    b.setInsertionPoint(i.alloc);
    Location allocLoc = i.alloc.getLoc();
    MemRefType type = i.alloc.getType();
    Value offset = arith::ConstantIndexOp::create(b, loc, i.offset);
    Value buffer;
    if (i.global) {
      Value at = arith::AddIOp::create(b, allocLoc, scratchBase, offset);
      buffer = memref::ViewOp::create(b, allocLoc, type, scratchBuffer, at,
                                      ValueRange{});
      for (Operation *user : llvm::to_vector(i.alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      i.alloc.getResult().replaceAllUsesWith(buffer);
      i.alloc.erase();
      continue;
    }
    if (i.paddedRow) {
      // A [rows, paddedRow] view, of which the tile is the [rows, cols]
      // part.
      auto padded = MemRefType::get({type.getDimSize(0), i.paddedRow},
                                    type.getElementType(), AffineMap(),
                                    workgroupSpace(b.getContext()));
      Value whole = memref::ViewOp::create(b, allocLoc, padded, window, offset,
                                           ValueRange{});
      buffer = memref::SubViewOp::create(
          b, allocLoc, whole, llvm::ArrayRef<int64_t>{0, 0}, type.getShape(),
          llvm::ArrayRef<int64_t>{1, 1});
    } else {
      buffer = memref::ViewOp::create(b, allocLoc, inWorkgroup(type), window,
                                      offset, ValueRange{});
    }
    for (Operation *user : llvm::to_vector(i.alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    for (TensorCorePlan &plan : tensorCorePlans)
      for (Value *stage : {&plan.stageA, &plan.stageB})
        if (*stage == i.alloc.getResult())
          *stage = buffer;
    i.alloc.getResult().replaceAllUsesWith(buffer);
    i.alloc.erase();
    if (failed(retypeViews(buffer)))
      return failure();
  }
  OpBuilder top(launch);
  Value bytes = arith::ConstantIntOp::create(top, loc, total, 32);
  launch.getDynamicSharedMemorySizeMutable().assign(bytes);
  return success();
}
