//===- LowerRegisterTiles.cpp - Chunk loops, tiles in registers -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-lower-register-tiles: a placed (sequence, head) loop (TilePlan,
// PlaceTiles.cpp) becomes a gpu.launch with one warpgroup per iteration.
// The body is emitted op by op in program order:
//
//  * fragments are the thread's elements (wgmma's accumulator layout) as
//    SSA scalars; elementwise ops run on them element by element, reading
//    on-demand tiles at the element's coordinates;
//  * a contraction stages its operands as bf16 copies in shared memory
//    (with the later contractions' operands that are ready, so that one
//    barrier serves them all) and issues wgmma with descriptors, except
//    that an A read from a fragment's registers (TilePlan::registerA) is
//    packed to bf16 pairs instead; its result is waited for at its first
//    reader;
//  * barriers: before rewriting a copy that wgmma may still read, and
//    before wgmma reads a copy threads wrote (after fence.proxy.async); a
//    loop whose body writes no shared memory gets one before it and none
//    inside;
//  * output rows are stored from the fragments, rows before the chunk end.
//
// The memory side (on-demand reads, copies, landing buffers, stores) is in
// TileMemory.cpp; the emitter's state in TileEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "TileEmitter.h"

#include "hla/Dialect/HLA/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SaveAndRestore.h"

#include <functional>
#include <limits>

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPULOWERREGISTERTILESPASS
#include "hla/Dialect/HLA/GPU/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

Value TileEmitter::scalar(Value v) {
  if (Value mapped = scalars.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (def && def->hasTrait<OpTrait::ConstantLike>() &&
      !plan.forall->isAncestor(def)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kernelEntry);
    Value copy = b.clone(*def)->getResult(0);
    scalars.map(v, copy);
    return copy;
  }
  return v;
}

llvm::SmallVector<Value>
TileEmitter::indicesAt(llvm::ArrayRef<OpFoldResult> offsets,
                       const llvm::SmallBitVector &dropped, Value row,
                       Value col) {
  llvm::SmallVector<Value> indices;
  int kept = 0;
  for (auto [d, offset] : llvm::enumerate(offsets)) {
    Value at = scalar(offset);
    if (!dropped.test(d))
      at = arith::AddIOp::create(b, loc, at, kept++ == 0 ? row : col);
    indices.push_back(at);
  }
  return indices;
}

llvm::SmallVector<Value>
TileEmitter::cloneBody(linalg::GenericOp op, llvm::ArrayRef<Value> ivs,
                       llvm::function_ref<Value(OpOperand &)> in) {
  Block &body = op.getRegion().front();
  IRMapping mapping;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    // A 0-d tensor is its one value everywhere (except a reduction's own
    // running value, which `in` gives).
    if (plan.of(operand.get()) == Placement::ScalarTensor &&
        !(op.isDpsInit(&operand) &&
          op.getNumReductionLoops() == op.getNumLoops())) {
      mapping.map(arg, zeroDim(operand.get()));
      continue;
    }
    mapping.map(arg, in(operand));
  }
  for (Operation &inner : body.without_terminator()) {
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(idx.getResult(), ivs[idx.getDim()]);
      continue;
    }
    for (Value operand : inner.getOperands())
      if (!mapping.contains(operand) &&
          !op.getRegion().isAncestor(operand.getParentRegion()))
        mapping.map(operand, scalar(operand));
    Operation *clone = b.clone(inner, mapping);
    // In a reduction computed by each thread of a pass parallel over
    // chunks (KDA's pair bands: an exponential per element and reduced
    // index, 131k per chunk), the hardware's exp2 (2 instructions, not
    // libdevice's 9; its relative error near 1e-7, beside bf16's 4e-3:
    // register tiles hold bf16 kernels only) and fused multiply-adds: KDA
    // 4x16x4096 hoisted 0.995 ms against 1.065. Not in chunk loops, whose
    // kernels sit at the register limit: there the same code ran slower
    // (fused 8x16x8192: 3.45 against 2.99; H100, 2026-12-06).
    auto fastmath = dyn_cast<arith::ArithFastMathInterface>(clone);
    if (fastmath && approximateMath) {
      arith::FastMathFlagsAttr given = fastmath.getFastMathFlagsAttr();
      arith::FastMathFlags flags =
          (given ? given.getValue() : arith::FastMathFlags::none) |
          arith::FastMathFlags::contract;
      if (isa<math::ExpOp>(clone))
        flags = flags | arith::FastMathFlags::afn;
      clone->setAttr(fastmath.getFastMathAttrName(),
                     arith::FastMathFlagsAttr::get(b.getContext(), flags));
    }
  }
  llvm::SmallVector<Value> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  return results;
}

llvm::SmallVector<Value> TileEmitter::elements(Value tile) {
  auto it = fragmentOf.find(tile);
  if (it != fragmentOf.end()) {
    if (!fragments[it->second].pending.empty())
      waitAll();
    return fragments[it->second].elements;
  }
  int64_t cols = columns(tile);
  llvm::SmallVector<Value> values;
  for (int64_t i = 0; i < slotsOf(tile); ++i)
    values.push_back(evalAt(tile, slotRow(i, cols), slotCol(i, cols)));
  return values;
}

void TileEmitter::waitAll() {
  if (pendingFragments.empty())
    return;
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  for (unsigned id : pendingFragments) {
    Fragment &f = fragments[id];
    for (Value acc : f.pending)
      for (int64_t i = 0; i < plan.slots(kFragmentRows, f.cols); ++i)
        f.elements.push_back(LLVM::ExtractValueOp::create(
            b, loc, acc, llvm::ArrayRef<int64_t>{i}));
    f.pending.clear();
  }
  pendingFragments.clear();
}

void TileEmitter::barrier() {
  // Threads' (generic-proxy) writes are made visible to wgmma's async
  // proxy before the barrier.
  if (unknownState || !writtenSince.empty())
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
  ++barriers;
  writtenSince.clear();
  // Reads of wgmma still in flight stay pending past the barrier.
  if (pendingFragments.empty())
    readSince.clear();
  unknownState = false;
}

void TileEmitter::emitContraction(linalg::GenericOp op) {
  MLIRContext *ctx = b.getContext();
  ContractionDims dims = *matchContraction(op);
  auto out = cast<RankedTensorType>(op.getResult(0).getType());
  int64_t n = out.getDimSize(1);
  // A from its fragment's registers (plan.registerA) or, as B, from a copy
  // in shared memory.
  bool registerA = plan.registerA.contains(op);
  OpOperand *operandA = contractionOperandA(op);
  unsigned stagedA = 0, stagedB = 0;
  bool kIsRowA = false, kIsRowB = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    bool isA = input == operandA;
    if (isA && registerA)
      continue;
    AffineMap map = op.getMatchingIndexingMap(input);
    unsigned i = *plan.stagedIndex(input->get());
    bool kIsRow = map.getDimPosition(0) == dims.k;
    if (isA) {
      stagedA = i;
      kIsRowA = kIsRow;
    } else {
      stagedB = i;
      kIsRowB = kIsRow;
    }
  }
  llvm::SmallVector<unsigned, 2> copies = {stagedB};
  if (!registerA)
    copies.push_back(stagedA);
  stage(op, copies);
  for (unsigned copy : copies)
    beforeRead(copy);
  Operand a = registerA ? Operand() : operandOf(stagedA, kIsRowA),
          bOp = operandOf(stagedB, kIsRowB);

  // The accumulator starts from C's initial value.
  Value init = op.getDpsInitOperand(0)->get();
  llvm::SmallVector<Value> start;
  auto fill = init.getDefiningOp<linalg::FillOp>();
  int64_t perBlock = plan.slots(kFragmentRows, n);
  // Each warpgroup computes its share of C's columns: B from warpgroup g's
  // first N group on.
  int64_t share = n / plan.warpgroups;
  if (plan.warpgroups > 1)
    bOp.base = arith::AddIOp::create(
        b, loc, bOp.base,
        arith::MulIOp::create(
            b, loc,
            arith::IndexCastUIOp::create(b, loc, b.getI64Type(), warpgroup),
            arith::ConstantIntOp::create(b, loc, share / 8 * bOp.mnGroupBytes,
                                         64)));
  // A product from zero starts with wgmma's scale-d off: D is not read, so
  // no zeros are written into the accumulator after the fence below (ptxas
  // would inject a warpgroup.arrive before each such chain, C7519).
  bool fromZero = fill && matchPattern(fill.value(), m_AnyZeroFloat());
  if (!fromZero) {
    start = elements(init);
    for (Value &v : start)
      if (!v.getType().isF32())
        v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  Type f32 = b.getF32Type();
  Type accType = LLVM::LLVMStructType::getLiteral(
      ctx, llvm::SmallVector<Type>(perBlock, f32));
  Fragment f = Fragment::of(op.getResult(0));
  auto descriptor = [&](const Operand &operand, int64_t k0, int64_t mn0) {
    return wgmmaDescriptorStrides(b, loc, operand.base,
                                  operand.offset +
                                      (k0 / 8) * operand.kGroupBytes +
                                      (mn0 / 8) * operand.mnGroupBytes,
                                  operand.kGroupBytes, operand.mnGroupBytes);
  };
  // A's registers: its fragment's elements in pairs, each 64-row block's
  // K slices in order, four registers a slice. Packed before the fence:
  // registers written between it and the wgmma that reads them make ptxas
  // serialize the chain.
  llvm::SmallVector<Value> aRegisters;
  if (registerA) {
    llvm::SmallVector<Value> values = elements(operandA->get());
    for (size_t i = 0; i + 1 < values.size(); i += 2)
      aRegisters.push_back(packBF16(values[i], values[i + 1]));
  }
  int64_t aRegistersPerBlock = plan.slots(kFragmentRows, dims.sizeK) / 2;
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  // One chain of wgmma per 64-row block of C, from A's rows of the block.
  for (int64_t rowBlock = 0; rowBlock * kFragmentRows < out.getDimSize(0);
       ++rowBlock) {
    Value acc = LLVM::UndefOp::create(b, loc, accType);
    if (!fromZero)
      for (int64_t i = 0; i < perBlock; ++i)
        acc = LLVM::InsertValueOp::create(b, loc, acc,
                                          start[rowBlock * perBlock + i],
                                          llvm::ArrayRef<int64_t>{i});
    for (int64_t k0 = 0; k0 < dims.sizeK; k0 += 16) {
      bool readsD = !fromZero || k0 > 0;
      Value descB = descriptor(bOp, k0, 0);
      if (registerA) {
        acc = wgmmaRegisterA(
            b, loc, acc, share,
            llvm::ArrayRef<Value>(aRegisters)
                .slice(rowBlock * aRegistersPerBlock + k0 / 4, 4),
            descB, readsD, bOp.mnMajor);
        continue;
      }
      Value descA = descriptor(a, k0, rowBlock * kFragmentRows);
      acc = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, accType, acc, descA, descB,
          NVVM::MMAShapeAttr::get(ctx, kFragmentRows, share, 16),
          NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32,
          readsD ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero,
          NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
          // A is M x K row-major unless transposed, B K x N column-major.
          a.mnMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          bOp.mnMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col,
          /*satfinite=*/nullptr);
    }
    f.pending.push_back(acc);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  readSince.insert(copies.begin(), copies.end());
  setFragment(op.getResult(0), f);
  pendingFragments.push_back(fragmentOf[op.getResult(0)]);
}

void TileEmitter::emitElementwise(linalg::GenericOp op) {
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  int64_t cols =
      cast<RankedTensorType>(op.getResult(0).getType()).getDimSize(1);
  llvm::DenseMap<Value, llvm::SmallVector<Value>> fragmentInputs;
  for (OpOperand &operand : op->getOpOperands())
    if (!op.getMatchingBlockArgument(&operand).use_empty() &&
        plan.of(operand.get()) == Placement::Frag &&
        op.getMatchingIndexingMap(&operand) == outMap)
      fragmentInputs[operand.get()] = elements(operand.get());
  // A row vector read along the output's columns or a column vector along
  // its rows, converted first.
  auto along = [&](OpOperand &operand) {
    return op.getMatchingIndexingMap(&operand) ==
                   outMap.getSubMap(llvm::ArrayRef<unsigned>{0})
               ? Placement::RowVector
               : Placement::ColVector;
  };
  llvm::DenseMap<Value, llvm::SmallVector<Value>> across =
      convertVectors(op, along);
  Fragment f = Fragment::of(op.getResult(0));
  for (int64_t i = 0; i < slotsOf(op.getResult(0)); ++i) {
    llvm::SmallVector<Value> ivs(2);
    ivs[outMap.getDimPosition(0)] = slotRow(i, cols);
    ivs[outMap.getDimPosition(1)] = slotCol(i, cols);
    f.elements.push_back(cloneBody(op, ivs, [&](OpOperand &operand) {
      auto it = fragmentInputs.find(operand.get());
      if (it != fragmentInputs.end() &&
          op.getMatchingIndexingMap(&operand) == outMap)
        return it->second[i];
      if (auto converted = across.find(operand.get());
          converted != across.end())
        return converted
            ->second[along(operand) == Placement::RowVector ? rowSlot(i, cols)
                                                            : colSlot(i, cols)];
      if (Value v = vectorAtSlot(operand.get(), i, cols))
        return v;
      return evalOperand(op, operand, ivs);
    })[0]);
  }
  setFragment(op.getResult(0), f);
}

llvm::SmallVector<Value> TileEmitter::vectorValues(Value vector,
                                                   Placement kind) {
  bool rows = kind == Placement::RowVector;
  if (plan.of(vector) == kind)
    return (rows ? rowVectors : colVectors).lookup(vector);
  int64_t n = cast<RankedTensorType>(vector.getType()).getDimSize(0);
  llvm::SmallVector<Value> values;
  for (int64_t t = 0; t < (rows ? rowVectorSlots(n) : colVectorSlots(n)); ++t)
    values.push_back(
        plan.of(vector) == Placement::ScalarTensor
            ? zeroDim(vector)
            : evalAt(vector, rows ? rowOfSlot(t) : colOfSlot(t), Value()));
  return values;
}

llvm::SmallVector<Value> TileEmitter::convertVector(Value vector, Placement to,
                                                    Value scratch) {
  bool toRows = to == Placement::RowVector;
  int64_t n = cast<RankedTensorType>(vector.getType()).getDimSize(0);
  llvm::SmallVector<Value> from =
      toRows ? colVectors.lookup(vector) : rowVectors.lookup(vector);
  barrier(); // the scratch's last readers are done
  // One thread of each row (lane 4r of warpgroup 0) writes a row vector's
  // values; the first four lanes of warpgroup 0 a column vector's.
  Value writer = holdsVector(plan.of(vector));
  auto write = scf::IfOp::create(b, loc, writer, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(write.thenBlock()->getTerminator());
    for (auto [t, value] : llvm::enumerate(from))
      memref::StoreOp::create(b, loc, value, scratch,
                              ValueRange{toRows ? colOfSlot(t) : rowOfSlot(t)});
  }
  barrier();
  llvm::SmallVector<Value> values;
  for (int64_t t = 0; t < (toRows ? rowVectorSlots(n) : colVectorSlots(n)); ++t)
    values.push_back(memref::LoadOp::create(
        b, loc, scratch, ValueRange{toRows ? rowOfSlot(t) : colOfSlot(t)}));
  return values;
}

llvm::DenseMap<Value, llvm::SmallVector<Value>>
TileEmitter::convertVectors(linalg::GenericOp op,
                            llvm::function_ref<Placement(OpOperand &)> wanted) {
  llvm::DenseMap<Value, llvm::SmallVector<Value>> converted;
  if (!plan.conversionScratch.count(op))
    return converted;
  int64_t k = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    Value vector = operand.get();
    Placement p = plan.of(vector);
    if ((p != Placement::RowVector && p != Placement::ColVector) ||
        p == wanted(operand) || converted.count(vector) ||
        op.getMatchingBlockArgument(&operand).use_empty())
      continue;
    int64_t n = cast<RankedTensorType>(vector.getType()).getDimSize(0);
    Value scratch =
        memref::ViewOp::create(b, loc,
                               MemRefType::get({n}, b.getF32Type(), AffineMap(),
                                               workgroupSpace(b.getContext())),
                               window,
                               index(plan.conversionScratch.lookup(op).offset +
                                     4 * kMaxFragmentRows * k++),
                               ValueRange{});
    converted[vector] = convertVector(vector, wanted(operand), scratch);
  }
  return converted;
}

Value TileEmitter::holdsVector(Placement kind) {
  if (kind == Placement::ColVector)
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, threadId,
                                 index(4));
  return arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                            arith::RemUIOp::create(b, loc, lane, index(4)),
                            index(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, threadId,
                            index(kTileThreads)));
}

void TileEmitter::emitVectorOp(linalg::GenericOp op) {
  Placement kind = plan.of(op.getResult(0));
  bool rows = kind == Placement::RowVector;
  int64_t n = cast<RankedTensorType>(op.getResult(0).getType()).getDimSize(0);
  auto &own = rows ? rowVectors : colVectors;
  llvm::DenseMap<Value, llvm::SmallVector<Value>> converted =
      convertVectors(op, [&](OpOperand &) { return kind; });
  llvm::SmallVector<Value> values;
  for (int64_t t = 0; t < (rows ? rowVectorSlots(n) : colVectorSlots(n)); ++t) {
    llvm::SmallVector<Value> ivs = {rows ? rowOfSlot(t) : colOfSlot(t)};
    values.push_back(cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
      if (plan.of(operand.get()) == kind)
        return own[operand.get()][t];
      auto it = converted.find(operand.get());
      if (it != converted.end())
        return it->second[t];
      return evalOperand(op, operand, ivs);
    })[0]);
  }
  own[op.getResult(0)] = values;
}

void TileEmitter::emitVectorReduction(linalg::GenericOp op) {
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  bool rows = plan.of(op.getResult(0)) == Placement::RowVector;
  unsigned outLoop = outMap.getDimPosition(0);
  unsigned rowLoop = rows ? outLoop : 1 - outLoop, colLoop = 1 - rowLoop;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t tileRows = ranges[rowLoop], cols = ranges[colLoop];
  Block &body = op.getRegion().front();
  Operation *fold = body.getTerminator()->getOperand(0).getDefiningOp();
  bool sum = isa<arith::AddFOp>(fold);
  Type type =
      cast<RankedTensorType>(op.getResult(0).getType()).getElementType();
  auto combine = [&](Value x, Value y) -> Value {
    if (sum)
      return arith::AddFOp::create(b, loc, x, y);
    return arith::MaximumFOp::create(b, loc, x, y);
  };
  auto slotOf = [&](int64_t i) {
    return rows ? rowSlot(i, cols) : colSlot(i, cols);
  };
  // Each thread folds its elements of each of its rows (columns) from the
  // fold's identity, in slot order.
  Value identity = arith::ConstantOp::create(
      b, loc,
      sum ? b.getFloatAttr(type, 0.0)
          : b.getFloatAttr(type, -std::numeric_limits<double>::infinity()));
  llvm::SmallVector<Value> partial(
      rows ? rowVectorSlots(tileRows) : colVectorSlots(cols), identity);
  llvm::DenseMap<Value, llvm::SmallVector<Value>> fragmentInputs;
  for (OpOperand *input : op.getDpsInputOperands())
    if (plan.of(input->get()) == Placement::Frag)
      fragmentInputs[input->get()] = elements(input->get());
  for (int64_t i = 0; i < plan.slots(tileRows, cols); ++i) {
    int64_t t = slotOf(i);
    llvm::SmallVector<Value> ivs(2);
    ivs[rowLoop] = slotRow(i, cols);
    ivs[colLoop] = slotCol(i, cols);
    partial[t] = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
      if (op.isDpsInit(&operand))
        return partial[t];
      auto it = fragmentInputs.find(operand.get());
      if (it != fragmentInputs.end())
        return it->second[i];
      if (Value v = vectorAtSlot(operand.get(), i, cols))
        return v;
      return evalOperand(op, operand, ivs);
    })[0];
  }
  // The threads of a row (lanes 4r .. 4r + 3) or of a column in a warp
  // (lanes c, c + 4, ..., c + 28) combine theirs by shuffles.
  Value width = arith::ConstantIntOp::create(b, loc, 32, 32);
  static constexpr int64_t rowLanes[] = {1, 2}, colLanes[] = {4, 8, 16};
  llvm::ArrayRef<int64_t> lanes =
      rows ? llvm::ArrayRef(rowLanes) : llvm::ArrayRef(colLanes);
  for (Value &value : partial)
    for (int64_t offset : lanes)
      value =
          combine(value, gpu::ShuffleOp::create(
                             b, loc, value,
                             arith::ConstantIntOp::create(b, loc, offset, 32),
                             width, gpu::ShuffleMode::XOR)
                             .getShuffleResult());
  if (!rows) {
    // A column's four warps: each warp's first four lanes write its
    // partial values, every thread adds the four in warp order.
    auto scratch = memref::ViewOp::create(
        b, loc,
        MemRefType::get({4 * cols}, type, AffineMap(),
                        workgroupSpace(b.getContext())),
        window, index(plan.reductionScratch.lookup(op)), ValueRange{});
    barrier(); // the scratch's last readers are done
    Value writer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         lane, index(4));
    auto write = scf::IfOp::create(b, loc, writer, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(write.thenBlock()->getTerminator());
      Value base = arith::MulIOp::create(b, loc, warpInGroup, index(cols));
      for (auto [c, value] : llvm::enumerate(partial))
        memref::StoreOp::create(
            b, loc, value, scratch,
            ValueRange{arith::AddIOp::create(b, loc, base, colOfSlot(c))});
    }
    barrier();
    for (auto [c, value] : llvm::enumerate(partial)) {
      Value total;
      for (int64_t w = 0; w < 4; ++w) {
        Value at = arith::AddIOp::create(b, loc, colOfSlot(c), index(w * cols));
        Value part = memref::LoadOp::create(b, loc, scratch, ValueRange{at});
        total = total ? combine(total, part) : part;
      }
      value = total;
    }
  }
  // The running value joins last (converted where it is of the other
  // orientation).
  Value initVector = op.getDpsInitOperand(0)->get();
  Placement kind = plan.of(op.getResult(0));
  llvm::DenseMap<Value, llvm::SmallVector<Value>> converted =
      convertVectors(op, [&](OpOperand &) { return kind; });
  llvm::SmallVector<Value> init = converted.count(initVector)
                                      ? converted.lookup(initVector)
                                      : vectorValues(initVector, kind);
  llvm::SmallVector<Value> values;
  for (auto [t, value] : llvm::enumerate(partial))
    values.push_back(combine(init[t], value));
  (rows ? rowVectors : colVectors)[op.getResult(0)] = values;
}

void TileEmitter::emitVectorPrefix(
    Value prefix, Value buffer,
    llvm::function_ref<llvm::SmallVector<Value>(Value)> indices) {
  // The vector's leading values, or all of it.
  Value vector = prefix;
  Value length = index(cast<RankedTensorType>(prefix.getType()).getDimSize(0));
  if (plan.of(prefix) == Placement::Prefix) {
    auto slice = prefix.getDefiningOp<tensor::ExtractSliceOp>();
    vector = slice.getSource();
    length = scalar(slice.getMixedSizes()[0]);
  }
  bool rows = plan.of(vector) == Placement::RowVector;
  llvm::SmallVector<Value> values =
      rows ? rowVectors.lookup(vector) : colVectors.lookup(vector);
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  // A row's first thread of warpgroup 0 stores a row vector's values; the
  // first four threads hold every column's value of a column vector.
  Value storer = holdsVector(plan.of(vector));
  auto store = scf::IfOp::create(b, loc, storer, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(store.thenBlock()->getTerminator());
  for (auto [t, value] : llvm::enumerate(values)) {
    Value at = rows ? rowOfSlot(t) : colOfSlot(t);
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, at, length);
    auto guardInside =
        scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(guardInside.thenBlock()->getTerminator());
    Value v = value;
    if (v.getType() != element) {
      if (!v.getType().isF32())
        v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
      if (!element.isF32())
        v = arith::TruncFOp::create(b, loc, element, v);
    }
    memref::StoreOp::create(b, loc, v, buffer, indices(at));
  }
}

void TileEmitter::emitVectorRow(tensor::InsertSliceOp op) {
  // The first four threads hold every column's value (those of the first
  // warp's first row): each stores its values, one row of the output.
  llvm::SmallVector<Value> values = colValues(op.getSource());
  tensor::ExtractSliceOp slice = plan.rowsSlice.lookup(op.getDest());
  Value storer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       threadId, index(4));
  auto store = scf::IfOp::create(b, loc, storer, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(store.thenBlock()->getTerminator());
  Value row = scalar(op.getMixedOffsets()[0]);
  Value col0 = scalar(op.getMixedOffsets()[1]);
  for (auto [c, value] : llvm::enumerate(values)) {
    Value col = arith::AddIOp::create(b, loc, col0, colOfSlot(c));
    memref::StoreOp::create(b, loc, value, buffers[slice.getSource()],
                            sliceIndices(slice, row, col));
  }
}

void TileEmitter::emitThreadReduction(linalg::GenericOp op) {
  llvm::SaveAndRestore approximate(
      approximateMath, plan.forall.getBody()->getOps<scf::ForOp>().empty() &&
                           !op->getParentOfType<scf::ForOp>());
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  Value result = op.getResult(0);
  int64_t cols = columns(result), slots = slotsOf(result);
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  llvm::SmallVector<Value> acc = elements(op.getDpsInitOperand(0)->get());
  // One loop nest over the reduced dimensions carrying every element of
  // the thread's: reads shared by its elements (a row's) are loaded once.
  llvm::SmallVector<unsigned> reduced;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    if (it == utils::IteratorType::reduction)
      reduced.push_back(d);
  llvm::SmallVector<Value> ivs(op.getNumLoops());
  llvm::SmallVector<scf::ForOp> loops;
  // Where every input is a 2-D tile read along the innermost reduced
  // dimension as its columns, that loop steps by 8 and each input's 8
  // columns are read at once (16 bytes of a token row, two 16-byte words
  // of an exact copy), not one element per step: KDA's bands read four
  // tiles per step.
  unsigned inner = reduced.back();
  bool byEight =
      ranges[inner] % 8 == 0 &&
      llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *operand) {
        if (op.getMatchingBlockArgument(operand).use_empty())
          return true;
        AffineMap map = op.getMatchingIndexingMap(operand);
        if (map.getNumResults() != 2 ||
            map.getResult(1) != b.getAffineDimExpr(inner) ||
            map.getResult(0).isFunctionOfDim(inner))
          return false;
        Placement p = plan.of(operand->get());
        return p == Placement::Expr ||
               (p == Placement::Frag &&
                plan.stagedIndex(operand->get(), /*exact=*/true));
      });
  OpBuilder::InsertionGuard guard(b);
  for (unsigned d : reduced) {
    int64_t step = byEight && d == inner ? 8 : 1;
    auto loop = scf::ForOp::create(b, loc, index(0), index(ranges[d]),
                                   index(step), acc);
    b.setInsertionPointToStart(loop.getBody());
    ivs[d] = loop.getInductionVar();
    acc.assign(loop.getRegionIterArgs().begin(),
               loop.getRegionIterArgs().end());
    loops.push_back(loop);
  }
  llvm::SmallVector<Value> next;
  for (int64_t i = 0; i < slots; ++i) {
    llvm::SmallVector<Value> at = ivs;
    at[outMap.getDimPosition(0)] = slotRow(i, cols);
    at[outMap.getDimPosition(1)] = slotCol(i, cols);
    if (!byEight) {
      next.push_back(cloneBody(op, at, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return acc[i];
        return evalOperand(op, operand, at);
      })[0]);
      continue;
    }
    llvm::DenseMap<OpOperand *, llvm::SmallVector<Value>> eight;
    for (OpOperand *operand : op.getDpsInputOperands()) {
      if (op.getMatchingBlockArgument(operand).use_empty())
        continue;
      llvm::SmallVector<Value> rc =
          applyMap(op.getMatchingIndexingMap(operand), at);
      eight[operand] = readRow8(operand->get(), rc[0], rc[1]);
    }
    Value sum = acc[i];
    for (int64_t j = 0; j < 8; ++j) {
      llvm::SmallVector<Value> atJ = at;
      atJ[inner] = arith::AddIOp::create(b, loc, at[inner], index(j));
      sum = cloneBody(op, atJ, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return sum;
        return eight[&operand][j];
      })[0];
    }
    next.push_back(sum);
  }
  for (scf::ForOp loop : llvm::reverse(loops)) {
    scf::YieldOp::create(b, loc, next);
    b.setInsertionPointAfter(loop);
    next.assign(loop.getResults().begin(), loop.getResults().end());
  }
  Fragment f = Fragment::of(result);
  f.elements = next;
  setFragment(result, f);
}

void TileEmitter::stageLoopInvariants(scf::ForOp loop) {
  llvm::SmallVector<unsigned> invariant;
  for (auto generic : loop.getBody()->getOps<linalg::GenericOp>()) {
    if (!matchContraction(generic) ||
        plan.of(generic.getResult(0)) != Placement::Frag)
      continue;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      Value tile = input->get();
      std::optional<unsigned> i = plan.stagedIndex(tile);
      if (!i || plan.staged[*i].landing || materialized.contains(*i) ||
          loop->isAncestor(tile.getParentBlock()->getParentOp()) ||
          llvm::is_contained(invariant, *i))
        continue;
      invariant.push_back(*i);
    }
  }
  for (unsigned i : invariant)
    materialize(i);
}

llvm::SmallVector<Value> TileEmitter::readInvariantVectors(scf::ForOp loop) {
  // How each candidate is read in the loop: along rows or columns.
  llvm::MapVector<Value, std::optional<Placement>> reads;
  loop.getBody()->walk([&](linalg::GenericOp op) {
    Placement result = plan.of(op.getResult(0));
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || type.getRank() != 1 || plan.of(v) != Placement::Expr ||
          loop->isAncestor(v.getParentBlock()->getParentOp()) ||
          op.getMatchingBlockArgument(&operand).use_empty())
        continue;
      // Read along the fragment's rows or columns: a 2-D elementwise op
      // into a fragment through its output map's row or column, or a
      // reduction into a row vector through its reduced loop.
      std::optional<Placement> along;
      AffineMap map = op.getMatchingIndexingMap(&operand);
      AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
      if (!op.isDpsInit(&operand) && result == Placement::Frag &&
          op.getNumReductionLoops() == 0 && out.getNumResults() == 2) {
        if (map == out.getSubMap(llvm::ArrayRef<unsigned>{0}))
          along = Placement::RowVector;
        if (map == out.getSubMap(llvm::ArrayRef<unsigned>{1}))
          along = Placement::ColVector;
      } else if (!op.isDpsInit(&operand) && result == Placement::RowVector &&
                 op.getNumLoops() == 2 && map.getNumResults() == 1 &&
                 map.getResult(0) != out.getResult(0)) {
        along = Placement::ColVector;
      }
      auto [it, inserted] = reads.insert({v, along});
      if (!inserted && it->second != along)
        it->second = std::nullopt;
    }
  });
  // At most 16 values a thread, held throughout the loop: LinSimp's rows
  // at m = 64 ran 5 % faster so (1x16x2048, W = 64: 0.554 ms against
  // 0.582), at m = 256 (64 values, its kernel at the register limit) 3 to
  // 5 % slower (H100, 2026-12-06).
  constexpr int64_t kMostInvariantValues = 16;
  llvm::SmallVector<Value> hoisted;
  for (auto &[v, along] : reads) {
    int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(0);
    if (!along || (*along == Placement::RowVector
                       ? rowVectorSlots(n)
                       : colVectorSlots(n)) > kMostInvariantValues)
      continue;
    (*along == Placement::RowVector ? rowVectors : colVectors)[v] =
        vectorValues(v, *along);
    plan.placement[v] = *along;
    hoisted.push_back(v);
  }
  return hoisted;
}

void TileEmitter::emitLoop(scf::ForOp loop) {
  waitAll();
  // Tiles made before the loop that its products read: copied once, here.
  stageLoopInvariants(loop);
  llvm::SmallVector<Value> invariantVectors = readInvariantVectors(loop);
  auto onDemandAgain = llvm::make_scope_exit([&] {
    for (Value v : invariantVectors)
      plan.placement[v] = Placement::Expr;
  });
  // Token rows copied a chunk ahead: the first chunk's before the loop.
  llvm::SmallVector<unsigned> landings;
  for (auto [i, l] : llvm::enumerate(plan.landing))
    if (l.tokens->getParentOp() == loop)
      landings.push_back(i);
  for (unsigned l : landings) {
    IRMapping first;
    first.map(loop.getInductionVar(), scalar(loop.getLowerBound()));
    issueLanding(l, loop.getBody(), first, index(0));
  }
  if (!landings.empty())
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  llvm::SmallVector<Value> inits;
  llvm::SmallVector<std::pair<unsigned, int64_t>> carried; // arg, elements
  for (auto [i, init] : llvm::enumerate(loop.getInitArgs())) {
    Placement p = plan.of(loop.getRegionIterArgs()[i]);
    if (p != Placement::Frag && p != Placement::ScalarTensor &&
        p != Placement::RowVector && p != Placement::ColVector)
      continue;
    // A 0-d value (a decay's running product) is one scalar.
    llvm::SmallVector<Value> values =
        p == Placement::Frag           ? elements(init)
        : p == Placement::ScalarTensor ? llvm::SmallVector<Value>{zeroDim(init)}
                                       : vectorValues(init, p);
    carried.push_back({unsigned(i), int64_t(values.size())});
    llvm::append_range(inits, values);
  }
  // A body that only reads shared memory finds there in every iteration
  // what the loop found, made visible once before it: no barrier inside.
  bool readOnly = readsSharedMemoryOnly(loop);
  if (readOnly && (unknownState || !writtenSince.empty()))
    barrier();
  auto newLoop = scf::ForOp::create(b, loc, scalar(loop.getLowerBound()),
                                    scalar(loop.getUpperBound()),
                                    scalar(loop.getStep()), inits);
  Block *body = newLoop.getBody();
  if (body->mightHaveTerminator())
    b.setInsertionPoint(body->getTerminator());
  else
    b.setInsertionPointToEnd(body);
  scalars.map(loop.getInductionVar(), newLoop.getInductionVar());
  int64_t next = 0;
  for (auto [arg, count] : carried) {
    Value iterArg = loop.getRegionIterArgs()[arg];
    if (plan.of(iterArg) == Placement::ScalarTensor) {
      reduced[iterArg] = body->getArgument(1 + next++);
      continue;
    }
    if (plan.of(iterArg) == Placement::RowVector ||
        plan.of(iterArg) == Placement::ColVector) {
      auto &values =
          (plan.of(iterArg) == Placement::RowVector ? rowVectors
                                                    : colVectors)[iterArg];
      for (int64_t j = 0; j < count; ++j)
        values.push_back(body->getArgument(1 + next++));
      continue;
    }
    Fragment f = Fragment::of(iterArg);
    for (int64_t j = 0; j < count; ++j)
      f.elements.push_back(body->getArgument(1 + next++));
    setFragment(iterArg, f);
  }
  // What the previous iteration left in shared memory is unknown here,
  // unless it wrote none.
  llvm::DenseSet<unsigned> outside = materialized;
  unknownState = !readOnly;
  int64_t barriersBefore = barriers, copiesBefore = copiesWritten;
  if (!landings.empty()) {
    // This chunk's rows have landed (this thread's copies, then everyone's);
    // the next chunk's go to the other buffer, last read before this
    // barrier.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    barrier();
    Value iv = newLoop.getInductionVar();
    Value lb = scalar(loop.getLowerBound()), step = scalar(loop.getStep());
    Value parity = arith::RemUIOp::create(
        b, loc,
        arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, lb),
                               step),
        index(2));
    Value next = arith::AddIOp::create(b, loc, iv, step);
    Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next,
                                       scalar(loop.getUpperBound()));
    auto ahead = scf::IfOp::create(b, loc, more, /*withElseRegion=*/false);
    for (unsigned l : landings) {
      // One buffer's elements.
      int64_t size =
          plan.landing[l].bufferBytes() / plan.landing[l].elementBytes();
      landingCurrent[l] = arith::MulIOp::create(b, loc, parity, index(size));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ahead.thenBlock()->getTerminator());
      Value other = arith::MulIOp::create(
          b, loc, arith::SubIOp::create(b, loc, index(1), parity), index(size));
      IRMapping ahead;
      ahead.map(loop.getInductionVar(), next);
      issueLanding(l, loop.getBody(), ahead, other);
    }
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  emitBlock(*loop.getBody());
  if (readOnly &&
      (barriers != barriersBefore || copiesWritten != copiesBefore)) {
    loop.emitOpError("hla-gpu-lower-register-tiles: internal error: a loop "
                     "taken to read shared memory only wrote some");
    broken = true;
  }
  for (unsigned l : landings)
    landingCurrent.erase(l);
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  llvm::SmallVector<Value> yielded;
  for (auto [arg, count] : carried) {
    Placement p = plan.of(loop.getRegionIterArgs()[arg]);
    if (p == Placement::ScalarTensor)
      yielded.push_back(zeroDim(yield.getOperand(arg)));
    else if (p == Placement::RowVector || p == Placement::ColVector)
      llvm::append_range(yielded, vectorValues(yield.getOperand(arg), p));
    else
      llvm::append_range(yielded, elements(yield.getOperand(arg)));
  }
  waitAll();
  if (body->mightHaveTerminator())
    body->getTerminator()->erase();
  b.setInsertionPointToEnd(body);
  scf::YieldOp::create(b, loc, yielded);
  b.setInsertionPointAfter(newLoop);
  next = 0;
  for (auto [arg, count] : carried) {
    if (plan.of(loop.getResult(arg)) == Placement::ScalarTensor) {
      reduced[loop.getResult(arg)] = newLoop.getResult(next++);
      continue;
    }
    if (plan.of(loop.getResult(arg)) == Placement::RowVector ||
        plan.of(loop.getResult(arg)) == Placement::ColVector) {
      auto &values = (plan.of(loop.getResult(arg)) == Placement::RowVector
                          ? rowVectors
                          : colVectors)[loop.getResult(arg)];
      for (int64_t j = 0; j < count; ++j)
        values.push_back(newLoop.getResult(next++));
      continue;
    }
    Fragment f = Fragment::of(loop.getResult(arg));
    for (int64_t j = 0; j < count; ++j)
      f.elements.push_back(newLoop.getResult(next++));
    setFragment(loop.getResult(arg), f);
  }
  materialized = outside;
  unknownState = true;
}

bool TileEmitter::readsSharedMemoryOnly(scf::ForOp loop) {
  for (TilePlan::Landing &l : plan.landing)
    if (l.tokens->getParentOp() == loop)
      return false; // token rows land in every iteration
  bool nested = false, scratch = false;
  loop.getBody()->walk([&](Operation *op) {
    nested |= isa<scf::ForOp, scf::IfOp>(op);
    scratch |=
        plan.reductionScratch.count(op) || plan.conversionScratch.count(op);
  });
  if (nested || scratch)
    return false;
  for (TilePlan::Staged &s : plan.staged) {
    if (s.landing)
      continue;
    if (loop->isAncestor(s.tile.getParentBlock()->getParentOp()))
      return false; // made in the loop
    for (Operation *user : s.tile.getUsers()) {
      if (!loop->isProperAncestor(user))
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (s.exact || !generic || !matchContraction(generic) ||
          generic->getBlock() != loop.getBody())
        return false;
    }
  }
  return true;
}

void TileEmitter::emitReduction(linalg::GenericOp op) {
  Value init = zeroDim(op.getDpsInitOperand(0)->get());
  Type type = init.getType();
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto scratch = memref::ViewOp::create(
      b, loc,
      MemRefType::get({plan.threads() / 32}, type, AffineMap(),
                      workgroupSpace(b.getContext())),
      window, index(plan.reductionScratch.lookup(op)), ValueRange{});
  // The scratch words were read after the last barrier of a previous
  // iteration, perhaps.
  if (unknownState)
    barrier();
  auto at = [&](OpOperand &operand, llvm::ArrayRef<Value> ivs) {
    return evalOperand(op, operand, ivs);
  };
  if (!isSum(op)) {
    // One thread folds the elements in order (a rare path: causal
    // isolation's search for the first non-finite token).
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        threadId, index(0));
    auto once = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(once.thenBlock()->getTerminator());
      // (A vector's one loop is `rows`; `cols` runs once.)
      bool vector = ranges.size() == 1;
      auto rows = scf::ForOp::create(b, loc, index(0), index(ranges[0]),
                                     index(1), ValueRange{init});
      b.setInsertionPointToStart(rows.getBody());
      auto cols =
          scf::ForOp::create(b, loc, index(0), index(vector ? 1 : ranges[1]),
                             index(1), ValueRange{rows.getRegionIterArg(0)});
      b.setInsertionPointToStart(cols.getBody());
      llvm::SmallVector<Value> ivs = {rows.getInductionVar()};
      if (!vector)
        ivs.push_back(cols.getInductionVar());
      Value next = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return cols.getRegionIterArg(0);
        return at(operand, ivs);
      })[0];
      scf::YieldOp::create(b, loc, next);
      b.setInsertionPointAfter(cols);
      scf::YieldOp::create(b, loc, cols.getResult(0));
      b.setInsertionPointAfter(rows);
      memref::StoreOp::create(b, loc, rows.getResult(0), scratch,
                              ValueRange{index(0)});
    }
    barrier();
    reduced[op.getResult(0)] =
        memref::LoadOp::create(b, loc, scratch, ValueRange{index(0)});
    return;
  }
  // A sum: each thread adds its share into a partial sum (from 0), warps
  // add theirs by shuffles, and the warps' sums (four per warpgroup) are
  // added to the initial value in a fixed order.
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  Value partial = zero;
  bool fragments = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
    return plan.of(in->get()) == Placement::Frag;
  });
  if (fragments) {
    llvm::DenseMap<Value, llvm::SmallVector<Value>> values;
    for (OpOperand *in : op.getDpsInputOperands())
      if (plan.of(in->get()) == Placement::Frag)
        values[in->get()] = elements(in->get());
    for (int64_t i = 0; i < plan.slots(ranges[0], ranges[1]); ++i) {
      llvm::SmallVector<Value> ivs = {slotRow(i, ranges[1]),
                                      slotCol(i, ranges[1])};
      partial = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return partial;
        auto it = values.find(operand.get());
        return it != values.end() ? it->second[i] : at(operand, ivs);
      })[0];
    }
  } else if (ranges.size() == 1) {
    // A vector: element i by thread i mod threads.
    auto loop = scf::ForOp::create(b, loc, threadId, index(ranges[0]),
                                   index(plan.threads()), ValueRange{zero});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    llvm::SmallVector<Value> ivs = {loop.getInductionVar()};
    Value running = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
      if (op.isDpsInit(&operand))
        return loop.getRegionIterArg(0);
      return at(operand, ivs);
    })[0];
    scf::YieldOp::create(b, loc, running);
    b.setInsertionPointAfter(loop);
    partial = loop.getResult(0);
  } else {
    int64_t rows = ranges[0], groups = ranges[1] / 8;
    auto loop = scf::ForOp::create(b, loc, threadId, index(rows * groups),
                                   index(plan.threads()), ValueRange{zero});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value unit = loop.getInductionVar();
    Value row = arith::RemUIOp::create(b, loc, unit, index(rows));
    Value col0 = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, unit, index(rows)), index(8));
    bool identity = llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *in) {
      return op.getMatchingIndexingMap(in).isIdentity();
    });
    llvm::DenseMap<Value, llvm::SmallVector<Value>> values;
    if (identity)
      for (OpOperand *in : op.getDpsInputOperands())
        values[in->get()] = evalRow8(in->get(), row, col0);
    Value running = loop.getRegionIterArg(0);
    for (int64_t j = 0; j < 8; ++j) {
      llvm::SmallVector<Value> ivs = {
          row, arith::AddIOp::create(b, loc, col0, index(j))};
      running = cloneBody(op, ivs, [&](OpOperand &operand) -> Value {
        if (op.isDpsInit(&operand))
          return running;
        return identity ? values[operand.get()][j] : at(operand, ivs);
      })[0];
    }
    scf::YieldOp::create(b, loc, running);
    b.setInsertionPointAfter(loop);
    partial = loop.getResult(0);
  }
  Value width = arith::ConstantIntOp::create(b, loc, 32, 32);
  for (int64_t offset : {16, 8, 4, 2, 1}) {
    Value other =
        gpu::ShuffleOp::create(b, loc, partial,
                               arith::ConstantIntOp::create(b, loc, offset, 32),
                               width, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    partial = arith::AddFOp::create(b, loc, partial, other);
  }
  Value warpInBlock = arith::DivUIOp::create(b, loc, threadId, index(32));
  Value leader =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
  auto write = scf::IfOp::create(b, loc, leader, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(write.thenBlock()->getTerminator());
    memref::StoreOp::create(b, loc, partial, scratch, ValueRange{warpInBlock});
  }
  barrier();
  Value total = init;
  for (int64_t w = 0; w < plan.threads() / 32; ++w)
    total = arith::AddFOp::create(
        b, loc, total,
        memref::LoadOp::create(b, loc, scratch, ValueRange{index(w)}));
  reduced[op.getResult(0)] = total;
}

void TileEmitter::emitIf(scf::IfOp op) {
  waitAll();
  llvm::SmallVector<Type> types;
  llvm::SmallVector<int64_t> counts;
  for (Value result : op.getResults()) {
    auto tile = dyn_cast<RankedTensorType>(result.getType());
    int64_t count =
        tile ? plan.slots(tile.getDimSize(0), tile.getDimSize(1)) : 1;
    counts.push_back(count);
    types.append(count, tile ? tile.getElementType() : result.getType());
  }
  auto branch = scf::IfOp::create(b, loc, types, scalar(op.getCondition()),
                                  /*withElseRegion=*/op.elseBlock() != nullptr);
  SyncState before = saveSync();
  auto emitSide = [&](Block *from, Block *to) {
    OpBuilder::InsertionGuard guard(b);
    if (to->mightHaveTerminator())
      b.setInsertionPoint(to->getTerminator());
    else
      b.setInsertionPointToEnd(to);
    restoreSync(before);
    emitBlock(*from);
    llvm::SmallVector<Value> yielded;
    for (Value v : from->getTerminator()->getOperands()) {
      if (isa<RankedTensorType>(v.getType()))
        llvm::append_range(yielded, elements(v));
      else
        yielded.push_back(scalar(v));
    }
    waitAll();
    if (to->mightHaveTerminator())
      to->getTerminator()->erase();
    b.setInsertionPointToEnd(to);
    scf::YieldOp::create(b, loc, yielded);
  };
  emitSide(op.thenBlock(), branch.thenBlock());
  if (op.elseBlock())
    emitSide(op.elseBlock(), branch.elseBlock());
  restoreSync(before);
  unknownState = true; // what either side left is not known here
  int64_t next = 0;
  for (auto [result, count] : llvm::zip(op.getResults(), counts)) {
    if (!isa<RankedTensorType>(result.getType())) {
      scalars.map(result, branch.getResult(next++));
      continue;
    }
    Fragment f = Fragment::of(result);
    for (int64_t j = 0; j < count; ++j)
      f.elements.push_back(branch.getResult(next++));
    setFragment(result, f);
  }
}

void TileEmitter::emitOp(Operation *op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    if (plan.of(generic.getResult(0)) == Placement::ScalarTensor &&
        generic.getNumLoops() == 0) {
      // 0-d arithmetic: every thread computes the one value.
      reduced[generic.getResult(0)] =
          cloneBody(generic, {}, [&](OpOperand &operand) {
            return zeroDim(operand.get());
          })[0];
      return;
    }
    if (plan.of(generic.getResult(0)) == Placement::ScalarTensor) {
      prepareExactReads(generic);
      return emitReduction(generic);
    }
    if (plan.of(generic.getResult(0)) == Placement::RowVector ||
        plan.of(generic.getResult(0)) == Placement::ColVector) {
      prepareExactReads(generic);
      if (generic.getNumReductionLoops() > 0)
        return emitVectorReduction(generic);
      return emitVectorOp(generic);
    }
    if (plan.of(generic.getResult(0)) != Placement::Frag)
      return;
    prepareExactReads(generic);
    if (matchContraction(generic))
      return emitContraction(generic);
    if (generic.getNumReductionLoops() > 0)
      return emitThreadReduction(generic);
    return emitElementwise(generic);
  }
  if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
    if (plan.of(copy.getResult(0)) == Placement::ScalarTensor) {
      reduced[copy.getResult(0)] = zeroDim(copy.getInputs()[0]);
      return;
    }
    if (plan.of(copy.getResult(0)) == Placement::RowVector) {
      rowVectors[copy.getResult(0)] = rowValues(copy.getInputs()[0]);
      return;
    }
    if (plan.of(copy.getResult(0)) == Placement::ColVector) {
      colVectors[copy.getResult(0)] = colValues(copy.getInputs()[0]);
      return;
    }
    auto it = fragmentOf.find(copy.getInputs()[0]);
    if (it != fragmentOf.end())
      fragmentOf[copy.getResult(0)] = it->second;
    return;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    if (plan.of(insert.getResult()) == Placement::Rows) {
      prepareExactReads(insert);
      if (plan.of(insert.getSource()) == Placement::ColVector) {
        emitVectorRow(insert);
      } else if (insert.getSourceType().getRank() == 1) {
        tensor::ExtractSliceOp slice = plan.rowsSlice.lookup(insert.getDest());
        Value offset = scalar(insert.getMixedOffsets()[0]);
        emitVectorPrefix(
            insert.getSource(), buffers[slice.getSource()], [&](Value at) {
              return sliceIndices(
                  slice, arith::AddIOp::create(b, loc, offset, at), Value());
            });
      } else {
        emitRows(insert);
      }
    }
    return;
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    prepareExactReads(loop);
    return emitLoop(loop);
  }
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return emitIf(branch);
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    scalars.map(extract.getResult(), zeroDim(extract.getTensor()));
    return;
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
      slice && plan.of(slice.getResult()) == Placement::ScalarTensor) {
    // A 0-d state an earlier kernel wrote: every thread reads it.
    reduced[slice.getResult()] =
        memref::LoadOp::create(b, loc, buffers[slice.getSource()],
                               sliceIndices(slice, Value(), Value()));
    return;
  }
  if (isa<scf::YieldOp, tensor::ExtractSliceOp, tensor::EmptyOp, linalg::FillOp,
          tensor::FromElementsOp>(op))
    return;
  if (llvm::any_of(op->getResults(),
                   [&](Value r) { return plan.of(r) != Placement::Scalar; }))
    return;
  for (Value operand : op->getOperands())
    scalar(operand);
  b.clone(*op, scalars);
}

void TileEmitter::emitBlock(Block &block) {
  for (Operation &op : block.without_terminator())
    emitOp(&op);
}

LogicalResult TileEmitter::run() {
  scf::ForallOp forall = plan.forall;
  MLIRContext *ctx = b.getContext();
  // Global memory: the function's tensors as buffers, a fresh buffer per
  // shared output (the loop's results).
  forall.getBody()->walk([&](tensor::ExtractSliceOp slice) {
    Value source = slice.getSource();
    if (!isa<FunctionOpInterface>(source.getParentRegion()->getParentOp()) ||
        buffers.count(source))
      return;
    auto type = cast<RankedTensorType>(source.getType());
    buffers[source] = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()), source,
        /*read_only=*/true);
  });
  // Whole 2-D tensors of global memory read as tiles where they are
  // needed: arguments widened outside the loops, earlier kernels' results
  // that contractions read.
  forall.getBody()->walk([&](linalg::GenericOp generic) {
    for (Value operand : generic->getOperands()) {
      Value whole = operand;
      if (isWidenedArgument(operand))
        whole = operand.getDefiningOp<linalg::GenericOp>()
                    .getDpsInputOperand(0)
                    ->get();
      else if (plan.of(operand) != Placement::Scalar ||
               !isa_and_nonnull<scf::ForallOp>(operand.getDefiningOp()))
        continue;
      auto type = cast<RankedTensorType>(whole.getType());
      if (buffers.count(whole) || type.getRank() != 2)
        continue;
      buffers[whole] = bufferization::ToBufferOp::create(
          b, loc, MemRefType::get(type.getShape(), type.getElementType()),
          whole, /*read_only=*/true);
    }
  });
  llvm::SmallVector<Value> results;
  for (auto [init, arg] :
       llvm::zip(forall.getOutputs(), forall.getRegionIterArgs())) {
    auto type = cast<RankedTensorType>(init.getType());
    Value buffer = memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()));
    buffers[arg] = buffer;
    results.push_back(bufferization::ToTensorOp::create(
        b, loc, type, buffer, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr()));
  }

  llvm::SmallVector<int64_t> bounds;
  int64_t blocks = 1;
  for (OpFoldResult ub : forall.getMixedUpperBound()) {
    bounds.push_back(*getConstantIntValue(ub));
    blocks *= bounds.back();
  }
  Value one = index(1);
  Value sharedBytes =
      arith::ConstantIntOp::create(b, loc, plan.sharedBytes, 32);
  auto launch =
      gpu::LaunchOp::create(b, loc, index(blocks), one, one,
                            index(plan.threads()), one, one, sharedBytes);
  kernelEntry = &launch.getBody().front();
  b.setInsertionPointToStart(kernelEntry);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(kernelEntry);

  // The forall's induction variables, row-major from the block index.
  Value linear = launch.getBlockIds().x;
  for (size_t d = bounds.size(); d-- > 0;) {
    Value iv = linear;
    if (d > 0) {
      iv = arith::RemUIOp::create(b, loc, linear, index(bounds[d]));
      linear = arith::DivUIOp::create(b, loc, linear, index(bounds[d]));
    }
    scalars.map(forall.getInductionVars()[d], iv);
  }
  threadId = launch.getThreadIds().x;
  lane = arith::RemUIOp::create(b, loc, threadId, index(32));
  warpInGroup = arith::RemUIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, threadId, index(32)), index(4));
  warpgroup = arith::DivUIOp::create(b, loc, threadId, index(kTileThreads));
  rowLo = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, warpInGroup, index(16)),
      arith::DivUIOp::create(b, loc, lane, index(4)));
  pairCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, index(4)), index(2));
  window = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                      workgroupSpace(ctx)));
  windowAddress = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, window));
  for (const TilePlan::Staged &s : plan.staged) {
    Type element = s.exact ? b.getF32Type() : b.getBF16Type();
    int64_t count = s.bytes() / (s.exact ? 4 : 2);
    stagedViews.push_back(
        s.landing ? Value()
                  : Value(memref::ViewOp::create(
                        b, loc,
                        MemRefType::get({count}, element, AffineMap(),
                                        workgroupSpace(ctx)),
                        window, index(s.offset), ValueRange{})));
  }

  for (const TilePlan::Landing &l : plan.landing)
    landingViews.push_back(memref::ViewOp::create(
        b, loc,
        MemRefType::get({l.bytes() / l.elementBytes()},
                        l.f32 ? b.getF32Type() : b.getBF16Type(), AffineMap(),
                        workgroupSpace(ctx)),
        window, index(l.offset), ValueRange{}));

  // A pass with no chunk loop: its token rows are copied into their
  // buffers first, then read from shared memory wherever they are needed.
  llvm::SmallVector<unsigned> upFront;
  for (auto [i, l] : llvm::enumerate(plan.landing))
    if (l.tokens->getParentOp() == forall.getOperation())
      upFront.push_back(i);
  for (unsigned l : upFront) {
    IRMapping none;
    issueLanding(l, forall.getBody(), none, index(0));
    landingCurrent[l] = index(0);
  }
  if (!upFront.empty()) {
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    barrier();
  }
  emitBlock(*forall.getBody());
  for (Operation &op : forall.getTerminator().getYieldingOps()) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op);
    if (!insert)
      continue;
    if (plan.of(insert.getSource()) == Placement::ScalarTensor) {
      // A 0-d state (a run's decay): the first thread stores it.
      Value value = zeroDim(insert.getSource());
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          threadId, index(0));
      auto once = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(once.thenBlock()->getTerminator());
      memref::StoreOp::create(b, loc, value, buffers[insert.getDest()],
                              indicesAt(insert.getMixedOffsets(),
                                        insert.getDroppedDims(), Value(),
                                        Value()));
      continue;
    }
    if (plan.of(insert.getSource()) == Placement::Expr &&
        insert.getSourceType().getRank() == 1) {
      emitVectorStore(insert);
      continue;
    }
    if (llvm::is_contained(
            {Placement::Prefix, Placement::RowVector, Placement::ColVector},
            plan.of(insert.getSource())) &&
        insert.getSourceType().getRank() == 1) {
      llvm::SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
      llvm::SmallBitVector dropped = insert.getDroppedDims();
      emitVectorPrefix(
          insert.getSource(), buffers[insert.getDest()],
          [&](Value at) { return indicesAt(offsets, dropped, at, Value()); });
      continue;
    }
    if (plan.of(insert.getSource()) != Placement::Rows)
      emitRows(insert);
  }
  waitAll();
  forall.replaceAllUsesWith(results);
  forall.erase();
  return success(!broken);
}

LogicalResult mlir::hla::gpumap::lowerRegisterTiles(TilePlan &plan) {
  return TileEmitter(plan).run();
}

namespace {

/// A launch reads and writes every buffer it is given.
struct LaunchFuncEffects
    : public MemoryEffectOpInterface::ExternalModel<LaunchFuncEffects,
                                                    gpu::LaunchFuncOp> {
  void getEffects(
      Operation *op,
      llvm::SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
          &effects) const {
    // Kernels write through their buffer operands, and may touch memory
    // they reach otherwise (globals, the stream's state): effects on the
    // default resource too, so that nothing deems a launch dead.
    effects.emplace_back(MemoryEffects::Read::get());
    effects.emplace_back(MemoryEffects::Write::get());
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<BaseMemRefType>(operand.get().getType()))
        continue;
      effects.emplace_back(MemoryEffects::Read::get(), &operand);
      effects.emplace_back(MemoryEffects::Write::get(), &operand);
    }
  }
};

} // namespace

void mlir::hla::registerHLAGPUInterfaceModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, gpu::GPUDialect *) {
    gpu::LaunchFuncOp::attachInterface<LaunchFuncEffects>(*ctx);
  });
}

namespace {

/// The shared memory the driver keeps for itself per block (sm_80, sm_90).
constexpr int64_t kReservedSharedBytes = 1024;

struct HLAGPULowerRegisterTilesPass
    : public hla::impl::HLAGPULowerRegisterTilesPassBase<
          HLAGPULowerRegisterTilesPass> {
  using HLAGPULowerRegisterTilesPassBase::HLAGPULowerRegisterTilesPassBase;

  void runOnOperation() override {
    if (warpgroups < 0 || warpgroups > 2) {
      getOperation().emitError()
          << "hla-gpu-lower-register-tiles: warpgroups must be 0 (auto), 1 or "
             "2, got "
          << static_cast<int64_t>(warpgroups);
      return signalPassFailure();
    }
    if (generator == ChunkLoopGenerator::Phases) {
      getOperation().emitError()
          << "hla-gpu-lower-register-tiles: generator must be auto or tiles "
             "(phases means that this pass does not run)";
      return signalPassFailure();
    }
    llvm::SmallVector<scf::ForallOp> loops(
        getOperation().getBody().getOps<scf::ForallOp>());
    for (scf::ForallOp forall : loops) {
      // A model graph's op or a run-time check: the phase mapper's.
      if (forall->hasAttr(kGraphLoopAttrName))
        continue;
      // Rewritten on a copy, kept only if the copy can be placed: the
      // phase mapper transposes in shared memory for free.
      OpBuilder builder(forall);
      auto candidate = cast<scf::ForallOp>(builder.clone(*forall));
      prepareForRegisterTiles(candidate);
      transposeProductReads(candidate);
      sinkIntoBranches(candidate);
      std::string why;
      // Half an SM's shared memory: two blocks an SM.
      int64_t half =
          (maxSharedMemory + kReservedSharedBytes) / 2 - kReservedSharedBytes;
      auto place = [&](ExtraLandings extra) {
        std::optional<TilePlan> plan = planRegisterTiles(candidate, why, extra);
        if (!plan)
          return plan;
        orderForRegisterPressure(*plan);
        readOperandsFromRegisters(*plan, warpgroups);
        // Copies share bytes only where they must: sharing adds waits and
        // barriers before rewrites (hla2 with isolation at 32 value columns
        // then spills 8 bytes). They must where the block would not fit,
        // and they do where that lets a second block of one warpgroup (at
        // most 255 registers a thread) on each SM, whose work then fills
        // the first's waits (LinSimp's rows: 175,744 bytes, 109,184
        // shared).
        if (plan->sharedBytes > maxSharedMemory) {
          shareSharedMemory(*plan);
        } else if (plan->sharedBytes > half &&
                   (warpgroups == 1 ||
                    (warpgroups == 0 && plan->peakFragmentRegisters <= 128))) {
          TilePlan shared = *plan;
          shareSharedMemory(shared);
          if (shared.sharedBytes <= half)
            plan = std::move(shared);
        }
        return plan;
      };
      ExtraLandings landings{/*upFront=*/true, landF32Stacks};
      std::optional<TilePlan> plan = place(landings);
      // A pass with no loop copies its most-read stacked tiles before its
      // work too, within half an SM's shared memory (two blocks an SM, as
      // its registers allow: one block's copies overlap the other's work).
      if (plan && plan->sharedBytes < half) {
        landings.passStackBytes = half - plan->sharedBytes;
        std::optional<TilePlan> more = place(landings);
        if (more && more->sharedBytes <= half &&
            more->landing.size() > plan->landing.size())
          plan = std::move(more);
        else if (more)
          plan = place(ExtraLandings{/*upFront=*/true, landF32Stacks});
      }
      // Tiles read from global memory where they are needed, where their
      // buffers would not fit.
      if (plan && plan->sharedBytes > maxSharedMemory)
        plan = place(ExtraLandings{/*upFront=*/false, /*f32Stacks=*/false});
      if (plan && plan->sharedBytes > maxSharedMemory) {
        why = llvm::formatv("its tiles' shared-memory copies and buffers "
                            "need {0} bytes, more than the {1} of a block",
                            plan->sharedBytes, maxSharedMemory)
                  .str();
        plan.reset();
      }
      if (plan) {
        forall->replaceAllUsesWith(candidate);
        forall->erase();
      } else {
        candidate->erase();
      }
      if (!plan) {
        if (generator == ChunkLoopGenerator::Tiles) {
          forall.emitOpError("hla-gpu-lower-register-tiles: cannot keep this "
                             "loop's tiles in registers: ")
              << why;
          return signalPassFailure();
        }
        if (report)
          forall.emitRemark("left to hla-gpu-map-chunk-loops: ") << why;
        continue;
      }
      if (failed(chooseWarpgroups(*plan, warpgroups, why))) {
        plan->forall.emitOpError("hla-gpu-lower-register-tiles: ") << why;
        return signalPassFailure();
      }
      if (report)
        plan->forall.emitRemark(plan->summary());
      if (failed(lowerRegisterTiles(*plan)))
        return signalPassFailure();
    }
  }
};

} // namespace
