//===- MapTma.cpp - Token tiles loaded by TMA -------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Token-tile loads that are exactly a TMA box (a zero fill of the [C, D]
// tile, then a copy of min(T - t0, C) rows) get a tensor map made on the
// host and become cp.async.bulk.tensor loads into shared memory, completed
// on an mbarrier (and, with prefetch, issued one iteration ahead).
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

using namespace mlir;
using namespace mlir::hla;
using namespace mlir::hla::gpumap;

/// Whether `len` is min(T - t0, C) (the rows of a chunk starting at `t0`).
static bool isChunkLength(Value len, Value t0, int64_t T, int64_t C) {
  auto min = len.getDefiningOp<arith::MinSIOp>();
  if (!min)
    return false;
  for (auto [rest, bound] : {std::pair(min.getLhs(), min.getRhs()),
                             std::pair(min.getRhs(), min.getLhs())}) {
    auto sub = rest.getDefiningOp<arith::SubIOp>();
    if (sub && sub.getRhs() == t0 && getConstantIntValue(sub.getLhs()) == T &&
        getConstantIntValue(bound) == C)
      return true;
  }
  return false;
}

void ChunkLoopMapper::planTmaLoads() {
  llvm::SmallVector<memref::CopyOp> copies;
  forall.getBody()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
  // One tensor map per argument and box (C tokens by D columns).
  llvm::DenseMap<std::tuple<Value, int64_t, int64_t>, Value> maps;
  for (memref::CopyOp copy : copies) {
    // Directly in the forall's body or in one loop there (the mbarrier's
    // phase is that loop's iteration count).
    Operation *parent = copy->getParentOp();
    if (parent != forall.getOperation() &&
        !(isa<scf::ForOp>(parent) && parent->getParentOp() == forall))
      continue;
    auto source = copy.getSource().getDefiningOp<memref::SubViewOp>();
    auto target = copy.getTarget().getDefiningOp<memref::SubViewOp>();
    if (!source || !target)
      continue;
    auto arg = dyn_cast<BlockArgument>(source.getSource());
    auto argType = dyn_cast<MemRefType>(source.getSource().getType());
    if (!arg || !isa<FunctionOpInterface>(arg.getOwner()->getParentOp()) ||
        !argType || argType.getRank() != 4 || !argType.hasStaticShape() ||
        !argType.getLayout().isIdentity())
      continue;
    Type element = argType.getElementType();
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    int32_t code = element.isF32()    ? 0
                   : element.isF16()  ? 1
                   : element.isBF16() ? 2
                                      : -1;
    auto tile = target.getSource().getDefiningOp<memref::AllocOp>();
    if (code < 0 || !tile || tile.getType().getRank() != 2 ||
        tile.getType().getElementType() != element)
      continue;
    int64_t C = tile.getType().getDimSize(0), D = tile.getType().getDimSize(1);
    int64_t T = argType.getDimSize(1);
    if (D > argType.getDimSize(3) || C > 256 || D > 256 ||
        (D * elementBytes) % 16)
      continue;
    // Source [b, t0, h, col] [1, len, 1, D] unit strides, col a value
    // tile's first column (0 for whole rows); target [0, 0] [len, D].
    llvm::SmallVector<OpFoldResult> offsets = source.getMixedOffsets(),
                                    sizes = source.getMixedSizes();
    if (!source.hasUnitStride() || !target.hasUnitStride() ||
        (D == argType.getDimSize(3) && getConstantIntValue(offsets[3]) != 0) ||
        getConstantIntValue(sizes[0]) != 1 ||
        getConstantIntValue(sizes[2]) != 1 ||
        getConstantIntValue(sizes[3]) != D ||
        llvm::any_of(target.getMixedOffsets(), [](OpFoldResult o) {
          return getConstantIntValue(o) != 0;
        }))
      continue;
    auto len = dyn_cast<Value>(sizes[1]);
    auto t0 = dyn_cast<Value>(offsets[1]);
    if (!len || !t0 || !isChunkLength(len, t0, T, C) ||
        target.getMixedSizes()[0] != sizes[1] ||
        getConstantIntValue(target.getMixedSizes()[1]) != D)
      continue;
    // The tile's zero fill comes first (TMA writes the rows past T).
    Operation *fill = adjacentEffectfulOp(copy, /*before=*/true);
    auto linalgFill = dyn_cast_or_null<linalg::FillOp>(fill);
    auto zero =
        linalgFill
            ? linalgFill.getInputs()[0].getDefiningOp<arith::ConstantOp>()
            : nullptr;
    auto zeroValue = zero ? dyn_cast<FloatAttr>(zero.getValue()) : nullptr;
    if (!linalgFill || linalgFill.getOutputs()[0] != tile.getResult() ||
        !zeroValue || !zeroValue.getValue().isZero())
      continue;

    // The tensor map, made on the host once per argument and box.
    Value &map = maps[{arg, C, D}];
    if (!map) {
      OpBuilder host(forall);
      Location loc = forall.getLoc();
      auto module = forall->getParentOfType<ModuleOp>();
      auto i64 = host.getI64Type(), i32 = host.getI32Type();
      llvm::SmallVector<Type> params = {i64, i32};
      params.append(8, i64);
      auto fnType = host.getFunctionType(params, {i64});
      if (!module.lookupSymbol<func::FuncOp>("hla_cuda_tensor_map")) {
        OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
        auto decl =
            func::FuncOp::create(top, loc, "hla_cuda_tensor_map", fnType);
        decl.setPrivate();
      }
      llvm::SmallVector<Value> operands = {
          arith::IndexCastUIOp::create(
              host, loc, i64,
              memref::ExtractAlignedPointerAsIndexOp::create(host, loc, arg)),
          arith::ConstantIntOp::create(host, loc, i32, code)};
      for (int64_t v : argType.getShape())
        operands.push_back(arith::ConstantIntOp::create(host, loc, i64, v));
      for (int64_t v : {int64_t(1), C, int64_t(1), D})
        operands.push_back(arith::ConstantIntOp::create(host, loc, i64, v));
      map = func::CallOp::create(host, loc, "hla_cuda_tensor_map",
                                 TypeRange{i64}, operands)
                .getResult(0);
    }
    tmaLoads.push_back(
        {copy, fill, tile.getResult(), map, C * D * elementBytes});
  }
}

/// An LLVM pointer in `space` to byte `offset` (+ `index` x `scale`) of
/// the buffer `memref` (from its aligned pointer).
static Value pointerTo(OpBuilder &b, Location loc, Value memref, unsigned space,
                       int64_t offset = 0, Value index = Value(),
                       int64_t scale = 0) {
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  if (offset)
    address = arith::AddIOp::create(
        b, loc, address, arith::ConstantIndexOp::create(b, loc, offset));
  if (index)
    address = arith::AddIOp::create(
        b, loc, address,
        arith::MulIOp::create(b, loc, index,
                              arith::ConstantIndexOp::create(b, loc, scale)));
  Value wide = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), space), wide);
}

/// Whether `value` depends, inside `loop`'s body, only on the induction
/// variable through side-effect-free ops (atIteration can evaluate it).
static bool evaluableAtIteration(Value value, scf::ForOp loop) {
  if (value == loop.getInductionVar())
    return true;
  Operation *def = value.getDefiningOp();
  if (!def)
    return !loop->isAncestor(value.getParentBlock()->getParentOp());
  if (!loop.getBody()->findAncestorOpInBlock(*def))
    return !loop->isAncestor(def);
  if (def->getNumRegions() || !isMemoryEffectFree(def) ||
      def->getBlock() != loop.getBody())
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return evaluableAtIteration(operand, loop);
  });
}

/// `value` as it would be in the iteration of `loop` whose induction
/// variable is `iv`: the side-effect-free ops of the loop body it depends on
/// are cloned at `b` with the loop's induction variable replaced. Null if
/// it depends on anything else in the body.
static Value atIteration(OpBuilder &b, Value value, scf::ForOp loop, Value iv,
                         IRMapping &mapping) {
  mapping.map(loop.getInductionVar(), iv);
  if (value == loop.getInductionVar())
    return iv;
  if (Value known = mapping.lookupOrNull(value))
    return known;
  Operation *def = value.getDefiningOp();
  if (!def || !loop.getBody()->findAncestorOpInBlock(*def))
    return loop->isAncestor(value.getParentBlock()->getParentOp()) ? Value()
                                                                   : value;
  if (def->getNumRegions() || !isMemoryEffectFree(def))
    return Value();
  for (Value operand : def->getOperands())
    if (!atIteration(b, operand, loop, iv, mapping))
      return Value();
  Operation *clone = b.clone(*def, mapping);
  return clone->getResult(cast<OpResult>(value).getResultNumber());
}

void ChunkLoopMapper::lowerTmaLoads(gpu::LaunchOp launch) {
  if (tmaLoads.empty())
    return;
  Block &entry = launch.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Location loc = launch.getLoc();
  Type i32 = b.getI32Type();
  auto c32 = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIntOp::create(nb, loc, i32, v);
  };
  auto cIndex = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      threadId, cIndex(b, 0));
  // Two mbarriers per load (one per tile buffer), initialised by thread 0
  // for one arrival each and made visible to the async proxy before use.
  llvm::SmallVector<Value> barriers;
  auto init = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  for (size_t i = 0; i < tmaLoads.size(); ++i) {
    OpBuilder before(init);
    auto alloc = memref::AllocOp::create(before, loc,
                                         MemRefType::get({2}, b.getI64Type()));
    sharedOnly.insert(alloc);
    barriers.push_back(alloc);
    OpBuilder ib(init.thenBlock()->getTerminator());
    for (int64_t j = 0; j < 2; ++j)
      NVVM::MBarrierInitOp::create(
          ib, loc, pointerTo(ib, loc, barriers.back(), 3, j * 8), c32(ib, 1),
          /*predicate=*/Value());
  }
  {
    OpBuilder ib(init.thenBlock()->getTerminator());
    NVVM::FenceMbarrierInitOp::create(ib, loc);
  }
  b.setInsertionPointAfter(init);
  gpu::BarrierOp::create(b, loc);

  for (size_t index = 0; index < tmaLoads.size(); ++index) {
    TmaLoad &load = tmaLoads[index];
    Value barrier = barriers[index];
    memref::CopyOp copy = load.copy;
    Location at = copy.getLoc();
    auto source = copy.getSource().getDefiningOp<memref::SubViewOp>();
    // The box's position: the source's offsets (b, t0, h, column) — read
    // now, as the forall's induction variables became the launch's.
    llvm::SmallVector<Value> position;
    {
      OpBuilder sb(source);
      for (int i : {0, 1, 2, 3})
        position.push_back(getValueOrCreateConstantIndexOp(
            sb, at, source.getMixedOffsets()[i]));
    }
    auto tileType = cast<MemRefType>(load.tile.getType());
    int64_t tileBytes = load.bytes;

    // In a loop whose next position can be computed, the tile is double
    // buffered: while iteration i computes on buffer i % 2, TMA fills
    // buffer (i + 1) % 2 with the next chunk's tile (schedule (a): the
    // next chunk's tiles load while the current one computes).
    auto loop = dyn_cast<scf::ForOp>(copy->getParentOp());
    Value buffers, iteration;
    bool prefetch = false;
    if (loop && tmaPrefetch)
      prefetch = llvm::all_of(
          position, [&](Value v) { return evaluableAtIteration(v, loop); });
    auto tileAlloc = load.tile.getDefiningOp<memref::AllocOp>();
    if (prefetch && tileAlloc && tileAlloc->getBlock() == loop.getBody()) {
      OpBuilder hb(loop);
      auto both = memref::AllocOp::create(
          hb, at,
          MemRefType::get({2, tileType.getDimSize(0), tileType.getDimSize(1)},
                          tileType.getElementType()));
      sharedOnly.insert(both);
      buffers = both;
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      iteration = arith::DivUIOp::create(
          lb, at,
          arith::SubIOp::create(lb, at, loop.getInductionVar(),
                                loop.getLowerBound()),
          loop.getStep());
      Value odd = arith::RemUIOp::create(lb, at, iteration, cIndex(lb, 2));
      lb.setInsertionPoint(tileAlloc);
      auto current = memref::SubViewOp::create(
          lb, at,
          cast<MemRefType>(memref::SubViewOp::inferRankReducedResultType(
              tileType.getShape(), both.getType(),
              llvm::ArrayRef<OpFoldResult>{odd, lb.getIndexAttr(0),
                                           lb.getIndexAttr(0)},
              llvm::ArrayRef<OpFoldResult>{
                  lb.getIndexAttr(1), lb.getIndexAttr(tileType.getDimSize(0)),
                  lb.getIndexAttr(tileType.getDimSize(1))},
              llvm::ArrayRef<OpFoldResult>{
                  lb.getIndexAttr(1), lb.getIndexAttr(1), lb.getIndexAttr(1)})),
          both,
          llvm::ArrayRef<OpFoldResult>{odd, lb.getIndexAttr(0),
                                       lb.getIndexAttr(0)},
          llvm::ArrayRef<OpFoldResult>{lb.getIndexAttr(1),
                                       lb.getIndexAttr(tileType.getDimSize(0)),
                                       lb.getIndexAttr(tileType.getDimSize(1))},
          llvm::ArrayRef<OpFoldResult>{lb.getIndexAttr(1), lb.getIndexAttr(1),
                                       lb.getIndexAttr(1)});
      for (Operation *user : llvm::to_vector(tileAlloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      tileAlloc.getResult().replaceAllUsesWith(current.getResult());
      tileAlloc.erase();
      // Views of the tile (the copy's target) follow its new layout.
      for (Operation *user : current->getUsers())
        if (auto view = dyn_cast<memref::SubViewOp>(user))
          view.getResult().setType(
              cast<MemRefType>(memref::SubViewOp::inferRankReducedResultType(
                  view.getType().getShape(), current.getType(),
                  view.getMixedOffsets(), view.getMixedSizes(),
                  view.getMixedStrides())));
    } else {
      prefetch = false;
    }

    // Thread 0 posts a box of `tileBytes` on mbarrier `slot` and starts
    // the copy of the tile at `where` (b, t0, h) into buffer `slot` (or the
    // tile itself without double buffering).
    auto issueLoad = [&](OpBuilder &ib, llvm::ArrayRef<Value> where,
                         Value slot) {
      NVVM::FenceProxyOp::create(
          ib, at, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(ib.getContext(),
                                     NVVM::SharedSpace::shared_cta));
      Value mbar = pointerTo(ib, at, barrier, 3, 0, slot, 8);
      NVVM::MBarrierArriveExpectTxOp::create(
          ib, at, Type(), mbar, c32(ib, tileBytes),
          NVVM::MemScopeKindAttr::get(ib.getContext(), NVVM::MemScopeKind::CTA),
          ib.getBoolAttr(false), /*predicate=*/Value());
      Value descriptor = LLVM::IntToPtrOp::create(
          ib, at, LLVM::LLVMPointerType::get(ib.getContext()), load.map);
      // Coordinates innermost first: (column, h, t0, b).
      llvm::SmallVector<Value> coordinates;
      for (int i : {3, 2, 1, 0})
        coordinates.push_back(
            arith::IndexCastOp::create(ib, at, i32, where[i]));
      // The destination as a shared::cluster address (this block's own
      // shared memory is part of its cluster's window).
      Value tile = prefetch ? pointerTo(ib, at, buffers, 3, 0, slot, tileBytes)
                            : pointerTo(ib, at, load.tile, 3);
      Value destination = LLVM::AddrSpaceCastOp::create(
          ib, at, LLVM::LLVMPointerType::get(ib.getContext(), 7), tile);
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          ib, at, destination, descriptor, coordinates, mbar,
          /*im2colOffsets=*/ValueRange{}, /*multicastMask=*/Value(),
          /*l2CacheHint=*/Value(),
          NVVM::TMALoadModeAttr::get(ib.getContext(), NVVM::TMALoadMode::TILE),
          ib.getBoolAttr(false), /*group=*/nullptr, /*predicate=*/Value());
    };
    Value haveMap;
    {
      OpBuilder mb(prefetch ? loop.getOperation() : load.fill);
      haveMap = arith::CmpIOp::create(
          mb, at, arith::CmpIPredicate::ne, load.map,
          arith::ConstantIntOp::create(mb, at, mb.getI64Type(), 0));
    }

    // Prologue: the first iteration's tile, before the loop.
    if (prefetch) {
      OpBuilder pb(loop);
      Value nonEmpty =
          arith::CmpIOp::create(pb, at, arith::CmpIPredicate::slt,
                                loop.getLowerBound(), loop.getUpperBound());
      Value go = arith::AndIOp::create(
          pb, at, arith::AndIOp::create(pb, at, first, haveMap), nonEmpty);
      auto prologue = scf::IfOp::create(pb, at, go, /*withElseRegion=*/false);
      OpBuilder ib(prologue.thenBlock()->getTerminator());
      IRMapping mapping;
      llvm::SmallVector<Value> where;
      for (Value v : position)
        where.push_back(
            atIteration(ib, v, loop, loop.getLowerBound(), mapping));
      issueLoad(ib, where, cIndex(ib, 0));
    }

    OpBuilder cb(load.fill);
    auto choice = scf::IfOp::create(cb, at, haveMap, /*withElseRegion=*/true);
    // Without a map (an input TMA cannot address): the fill and the copy
    // (whose views are made before the choice).
    for (Value view : {copy.getSource(), copy.getTarget()})
      (void)defineBefore(view, choice);
    load.fill->moveBefore(choice.elseBlock()->getTerminator());
    copy->moveBefore(choice.elseBlock()->getTerminator());
    // With one: after every thread is done with the buffers' last contents,
    // thread 0 starts the next iteration's load (or, unbuffered, this
    // one's); all threads wait for this iteration's mbarrier phase.
    OpBuilder tb(choice.thenBlock()->getTerminator());
    gpu::BarrierOp::create(tb, at);
    Value slot = cIndex(tb, 0), phase = cIndex(tb, 0);
    if (prefetch) {
      slot = arith::RemUIOp::create(tb, at, iteration, cIndex(tb, 2));
      phase = arith::DivUIOp::create(tb, at, iteration, cIndex(tb, 2));
      Value nextIv =
          arith::AddIOp::create(tb, at, loop.getInductionVar(), loop.getStep());
      Value hasNext = arith::CmpIOp::create(tb, at, arith::CmpIPredicate::slt,
                                            nextIv, loop.getUpperBound());
      auto issue = scf::IfOp::create(
          tb, at, arith::AndIOp::create(tb, at, first, hasNext),
          /*withElseRegion=*/false);
      OpBuilder ib(issue.thenBlock()->getTerminator());
      IRMapping mapping;
      llvm::SmallVector<Value> where;
      for (Value v : position)
        where.push_back(atIteration(ib, v, loop, nextIv, mapping));
      issueLoad(ib, where, arith::SubIOp::create(ib, at, cIndex(ib, 1), slot));
    } else {
      if (loop) {
        // Unbuffered in a loop: one load per iteration, phase = iteration.
        Value count = arith::DivUIOp::create(
            tb, at,
            arith::SubIOp::create(tb, at, loop.getInductionVar(),
                                  loop.getLowerBound()),
            loop.getStep());
        phase = count;
      }
      auto issue = scf::IfOp::create(tb, at, first, /*withElseRegion=*/false);
      OpBuilder ib(issue.thenBlock()->getTerminator());
      issueLoad(ib, position, slot);
    }
    Value parity = arith::AndIOp::create(
        tb, at, arith::IndexCastUIOp::create(tb, at, i32, phase), c32(tb, 1));
    NVVM::MBarrierTryWaitParityOp::create(
        tb, at, pointerTo(tb, at, barrier, 3, 0, slot, 8), parity,
        c32(tb, 10000000));
  }
}
