//===- MapHelpers.cpp - Helpers of the chunk-loop mapping -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What several steps of hla-gpu-map-chunk-loops use: device memory on the
// launches' stream, workgroup memory types, barriers, and moving ops within
// a block.
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
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

namespace mlir::hla::gpumap {

std::optional<ContractionDims> matchContraction(linalg::GenericOp op) {
  if (op.getNumLoops() != 3 || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
        !op.getMatchingIndexingMap(&operand).isProjectedPermutation())
      return std::nullopt;
  }
  // Body: mulf of the two inputs, added to the output.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || body.getOperations().size() != 3)
    return std::nullopt;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if ((add.getLhs() != out && add.getRhs() != out))
    return std::nullopt;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul || !((mul.getLhs() == body.getArgument(0) &&
                 mul.getRhs() == body.getArgument(1)) ||
                (mul.getLhs() == body.getArgument(1) &&
                 mul.getRhs() == body.getArgument(0))))
    return std::nullopt;

  ContractionDims dims;
  unsigned reduction = 0;
  llvm::SmallVector<unsigned> parallel;
  for (auto [d, kind] : llvm::enumerate(op.getIteratorTypesArray()))
    if (kind == utils::IteratorType::reduction)
      reduction = d;
    else
      parallel.push_back(d);
  AffineMap mapA = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap mapB = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  auto uses = [](AffineMap map, unsigned d) { return map.isFunctionOfDim(d); };
  if (!uses(mapA, reduction) || !uses(mapB, reduction))
    return std::nullopt;
  // m: the parallel dimension of A; n: that of B.
  if (uses(mapA, parallel[0]) && uses(mapB, parallel[1])) {
    dims.m = parallel[0];
    dims.n = parallel[1];
  } else if (uses(mapA, parallel[1]) && uses(mapB, parallel[0])) {
    dims.m = parallel[1];
    dims.n = parallel[0];
  } else {
    return std::nullopt;
  }
  dims.k = reduction;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  dims.sizeM = ranges[dims.m];
  dims.sizeN = ranges[dims.n];
  dims.sizeK = ranges[dims.k];
  dims.accumulates = true;
  if (dims.sizeM % 16 || dims.sizeN % 8 || dims.sizeK % 16)
    return std::nullopt;
  return dims;
}

Value wgmmaDescriptor(OpBuilder &b, Location loc, Value address,
                      int64_t constant, int64_t rows) {
  return wgmmaDescriptorStrides(b, loc, address, constant, rows / 8 * 128, 128);
}

Value wgmmaDescriptorStrides(OpBuilder &b, Location loc, Value address,
                             int64_t constant, int64_t leading,
                             int64_t stride) {
  uint64_t fields =
      (uint64_t(leading >> 4) << 16) | (uint64_t(stride >> 4) << 32);
  // Start address, leading (K) and stride (M/N) byte offsets, all in units
  // of 16 bytes; no swizzling (bits 62-63 zero).
  std::string text = "{ .reg .b64 t; add.s64 t, $1, " +
                     std::to_string(constant) +
                     "; shr.b64 t, t, 4; and.b64 t, t, 16383; or.b64 $0, "
                     "t, " +
                     std::to_string(fields) + "; }";
  return LLVM::InlineAsmOp::create(
             b, loc, b.getI64Type(), ValueRange{address}, text, "=l,l",
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             /*asm_dialect=*/nullptr, /*operand_attrs=*/nullptr)
      .getResult(0);
}

Value wgmmaRegisterA(OpBuilder &b, Location loc, Value acc, int64_t n,
                     llvm::ArrayRef<Value> a, Value descB, bool readsD,
                     bool transposeB) {
  int64_t count = n / 2;
  // Outputs $0.. the accumulator, tied to the inputs after them; then A's
  // four registers and B's descriptor.
  std::string d, constraints;
  llvm::SmallVector<Value> operands;
  for (int64_t i = 0; i < count; ++i) {
    d += (i ? ", $" : "$") + std::to_string(i);
    constraints += "=f,";
    operands.push_back(
        LLVM::ExtractValueOp::create(b, loc, acc, llvm::ArrayRef<int64_t>{i}));
  }
  for (int64_t i = 0; i < count; ++i)
    constraints += std::to_string(i) + ",";
  constraints += "r,r,r,r,l";
  llvm::append_range(operands, a);
  operands.push_back(descB);
  auto operand = [&](int64_t i) { return "$" + std::to_string(2 * count + i); };
  std::string text =
      "{\n.reg .pred p;\nsetp.ne.b32 p, " + std::to_string(readsD ? 1 : 0) +
      ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
      "k16.f32.bf16.bf16 {" + d + "}, {" + operand(0) + ", " + operand(1) +
      ", " + operand(2) + ", " + operand(3) + "}, " + operand(4) +
      ", p, 1, 1, " + std::to_string(transposeB ? 1 : 0) + ";\n}\n";
  return LLVM::InlineAsmOp::create(b, loc, acc.getType(), operands, text,
                                   constraints, /*has_side_effects=*/true,
                                   /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None,
                                   /*asm_dialect=*/nullptr,
                                   /*operand_attrs=*/nullptr)
      .getResult(0);
}

gpu::AddressSpaceAttr workgroupSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

//===----------------------------------------------------------------------===//
// Device memory on the launches' stream
//===----------------------------------------------------------------------===//
//
// Each helper opens with `gpu.wait async` (mgpuStreamCreate: the one stream
// hla's launches use), so allocations, copies and frees are ordered with
// the kernels without synchronising; only a copy whose data the host
// reads waits for it.

/// A device buffer of `type`.
Value allocOnStream(OpBuilder &b, Location loc, MemRefType type,
                    ValueRange dynamicSizes, ValueRange symbols) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value ready =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
  return gpu::AllocOp::create(b, loc, type, tokenType, ValueRange{ready},
                              dynamicSizes, symbols, /*hostShared=*/false)
      .getMemref();
}

/// Frees `buffer` once the work queued before is done (stream order: the
/// host does not wait).
void freeOnStream(OpBuilder &b, Location loc, Value buffer) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value ready =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
  gpu::DeallocOp::create(b, loc, tokenType, ValueRange{ready}, buffer);
}

/// Copies `from` into `to` (host or device memory); the host waits for
/// the copy only where it reads `to` next (`hostReads`).
void copyOnStream(OpBuilder &b, Location loc, Value to, Value from,
                  bool hostReads) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value ready =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
  Value copied =
      gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{ready}, to, from)
          .getAsyncToken();
  if (hostReads)
    gpu::WaitOp::create(b, loc, Type(), ValueRange{copied});
}

/// `type` moved to workgroup memory.
MemRefType inWorkgroup(MemRefType type) {
  return MemRefType::get(type.getShape(), type.getElementType(),
                         type.getLayout(), workgroupSpace(type.getContext()));
}

int64_t byteSize(MemRefType type) {
  int64_t bits = type.getElementTypeBitWidth();
  return (type.getNumElements() * bits + 7) / 8;
}

/// Emits a barrier before `op` unless one is already there.
void barrierBefore(Operation *op) {
  if (Operation *prev = op->getPrevNode())
    if (isa<gpu::BarrierOp>(prev))
      return;
  OpBuilder b(op);
  gpu::BarrierOp::create(b, op->getLoc());
}

void barrierAfter(Operation *op) {
  if (Operation *next = op->getNextNode())
    if (isa<gpu::BarrierOp>(next))
      return;
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  gpu::BarrierOp::create(b, op->getLoc());
}

/// A constant upper bound (inclusive) of an index value: from the value
/// bounds analysis, or through the `min(x, c)` that chunk bounds are made of
/// (which the analysis does not see through).
std::optional<int64_t> constantUpperBound(Value value) {
  FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(value),
      /*stopCondition=*/nullptr, /*closedUB=*/true);
  if (succeeded(bound))
    return *bound;
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<arith::MinSIOp, arith::MinUIOp>(def)) {
    std::optional<int64_t> a = constantUpperBound(def->getOperand(0));
    std::optional<int64_t> b = constantUpperBound(def->getOperand(1));
    if (a && b)
      return std::min(*a, *b);
    return a ? a : b;
  }
  if (auto mul = dyn_cast<arith::MulIOp>(def)) {
    // Sizes: both factors are non-negative.
    std::optional<int64_t> a = constantUpperBound(mul.getLhs());
    std::optional<int64_t> b = constantUpperBound(mul.getRhs());
    if (a && b)
      return *a * *b;
    return std::nullopt;
  }
  if (auto dim = dyn_cast<memref::DimOp>(def)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto subview = dim.getSource().getDefiningOp<memref::SubViewOp>();
    if (!index || !subview)
      return std::nullopt;
    // The result dimension's size among the subview's (rank-reducing views
    // drop unit dimensions).
    llvm::SmallBitVector dropped = subview.getDroppedDims();
    int64_t seen = -1;
    for (auto [d, size] : llvm::enumerate(subview.getMixedSizes())) {
      if (dropped.test(d) || ++seen != *index)
        continue;
      if (std::optional<int64_t> c = getConstantIntValue(size))
        return c;
      return constantUpperBound(cast<Value>(size));
    }
  }
  return std::nullopt;
}

/// Moves the side-effect-free definition of `value` (and, first, of its
/// operands) above `point` when it comes after it in the same block.
/// Returns false if that is not possible.
bool defineBefore(Value value, Operation *point) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != point->getBlock() ||
      def->isBeforeInBlock(point))
    return true;
  // Allocations of static buffers may start earlier: that only lengthens
  // their lifetime.
  bool staticAlloc = isa<memref::AllocOp>(def) && def->getNumOperands() == 0;
  if (def == point || def->getNumRegions() ||
      (!isMemoryEffectFree(def) && !staticAlloc))
    return false;
  for (Value operand : def->getOperands())
    if (!defineBefore(operand, point))
      return false;
  def->moveBefore(point);
  return true;
}

/// The op that reads or writes memory next to `op` in its block (before it
/// when `before`), skipping side-effect-free ops, barriers, allocations and
/// deallocations, or null.
Operation *adjacentEffectfulOp(Operation *op, bool before) {
  for (Operation *cur = before ? op->getPrevNode() : op->getNextNode(); cur;
       cur = before ? cur->getPrevNode() : cur->getNextNode()) {
    // Allocating or freeing a buffer reads and writes no element.
    if (isa<gpu::BarrierOp, memref::AllocOp, memref::DeallocOp>(cur))
      continue;
    if (cur->getNumRegions() != 0 || !isMemoryEffectFree(cur))
      return cur;
  }
  return nullptr;
}

} // namespace mlir::hla::gpumap
