//===- MapDistribute.cpp - Linalg ops shared out over threads ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every linalg.generic of a block's program is shared out over the block's
// threads between barriers: parallel iterations round-robin, reductions
// per thread; whole-tile sums by thread shares, warp shuffles and one
// atomic per warp.
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

bool ChunkLoopMapper::distributeFullSum(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumParallelLoops() != 0)
    return false;
  OpOperand &init = op.getDpsInitsMutable()[0];
  auto outType = dyn_cast<MemRefType>(init.get().getType());
  if (!outType || outType.getRank() != 0 || !outType.getElementType().isF32())
    return false;
  // The body must be out + X with X independent of out.
  Block &region = op.getRegion().front();
  BlockArgument outArg = op.getMatchingBlockArgument(&init);
  auto yield = cast<linalg::YieldOp>(region.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &region)
    return false;
  Value term = add.getLhs() == outArg ? add.getRhs() : add.getLhs();
  if ((add.getLhs() != outArg && add.getRhs() != outArg) ||
      llvm::any_of(outArg.getUsers(),
                   [&](Operation *user) { return user != add; }))
    return false;
  for (OpOperand *input : op.getDpsInputOperands())
    if (!isa<MemRefType>(input->get().getType()))
      return false;

  barrierBefore(op);
  OpBuilder b(op);
  Location loc = op.getLoc();
  llvm::SmallVector<Range> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc);
  unsigned numLoops = op.getNumLoops();
  auto size = [&](unsigned d) {
    return getValueOrCreateConstantIndexOp(b, loc, ranges[d].size);
  };
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (unsigned d = 0; d < numLoops; ++d)
    count = b.createOrFold<arith::MulIOp>(loc, count, size(d));
  Type f32 = b.getF32Type();
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  // This thread's share: elements threadId, threadId + threads, ...
  auto share = scf::ForOp::create(
      b, loc, threadId, count, numThreads, ValueRange{zero},
      [&](OpBuilder &nb, Location l, Value linear, ValueRange acc) {
        llvm::SmallVector<Value> ivs(numLoops);
        for (unsigned d = numLoops; d-- > 0;) {
          if (d == 0) {
            ivs[d] = linear;
            break;
          }
          ivs[d] = arith::RemUIOp::create(nb, l, linear, size(d));
          linear = arith::DivUIOp::create(nb, l, linear, size(d));
        }
        IRMapping map;
        for (OpOperand *input : op.getDpsInputOperands()) {
          BlockArgument arg = op.getMatchingBlockArgument(input);
          if (arg.use_empty())
            continue;
          llvm::SmallVector<Value> indices;
          AffineMap m = op.getMatchingIndexingMap(input);
          for (AffineExpr e : m.getResults())
            indices.push_back(affine::makeComposedAffineApply(
                                  nb, l, AffineMap::get(m.getNumDims(), 0, e),
                                  getAsOpFoldResult(ivs))
                                  .getResult());
          map.map(arg, memref::LoadOp::create(nb, l, input->get(), indices));
        }
        for (Operation &inner : region.without_terminator()) {
          if (&inner == add.getOperation())
            continue;
          if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
            map.map(index.getResult(), ivs[index.getDim()]);
            continue;
          }
          nb.clone(inner, map);
        }
        Value sum =
            arith::AddFOp::create(nb, l, acc[0], map.lookupOrDefault(term));
        scf::YieldOp::create(nb, l, sum);
      });
  // The warp's sum in every lane (butterfly shuffles).
  Value sum = share.getResult(0);
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 32);
  };
  for (int64_t offset = 16; offset >= 1; offset /= 2) {
    Value other =
        NVVM::ShflOp::create(b, loc, f32, i32(-1), sum, i32(offset), i32(31),
                             NVVM::ShflKind::bfly, UnitAttr())
            .getResult();
    sum = arith::AddFOp::create(b, loc, sum, other);
  }
  Value lane = arith::RemUIOp::create(
      b, loc, threadId, arith::ConstantIndexOp::create(b, loc, 32));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                            arith::ConstantIndexOp::create(b, loc, 0));
  auto perWarp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(perWarp.thenBlock());
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, sum,
                                init.get(), ValueRange{});
  }
  barrierAfter(perWarp);
  op.erase();
  return true;
}

LogicalResult ChunkLoopMapper::distributeGeneric(linalg::GenericOp op) {
  if (distributeFullSum(op))
    return success();
  if (!op.hasPureBufferSemantics())
    return op.emitOpError("hla-gpu-map-chunk-loops: expected buffers");
  OpBuilder b(op);
  Location loc = op.getLoc();
  barrierBefore(op);

  // The iteration space: parallel dimensions over the threads, reductions
  // in each thread.
  llvm::SmallVector<Range> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc);
  llvm::SmallVector<unsigned> parallel, reduction;
  for (auto [d, kind] : llvm::enumerate(op.getIteratorTypesArray()))
    (kind == utils::IteratorType::parallel ? parallel : reduction).push_back(d);
  auto size = [&](unsigned d) {
    return getValueOrCreateConstantIndexOp(b, loc, ranges[d].size);
  };
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (unsigned d : parallel)
    count = b.createOrFold<arith::MulIOp>(loc, count, size(d));

  unsigned numLoops = op.getNumLoops();
  // With a constant bound on the element count (a ragged chunk's rows are
  // at most the chunk), each thread runs a loop of constant trip count,
  // which LLVM unrolls, so that a thread's loads are in flight together.
  Operation *loop;
  Value linear;
  std::optional<int64_t> bound = constantUpperBound(count);
  if (bound) {
    int64_t trips = (*bound + threads - 1) / threads;
    auto strided =
        scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                           arith::ConstantIndexOp::create(b, loc, trips),
                           arith::ConstantIndexOp::create(b, loc, 1));
    b.setInsertionPointToStart(strided.getBody());
    linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, strided.getInductionVar(),
                              arith::ConstantIndexOp::create(b, loc, threads)),
        threadId);
    loop = strided;
    std::optional<int64_t> exact = getConstantIntValue(count);
    if (!exact || *exact % threads != 0) {
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           linear, count);
      auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      b.setInsertionPointToStart(guard.thenBlock());
    }
  } else {
    auto strided = scf::ForOp::create(b, loc, threadId, count, numThreads);
    b.setInsertionPointToStart(strided.getBody());
    linear = strided.getInductionVar();
    loop = strided;
  }
  llvm::SmallVector<Value> ivs(numLoops);
  for (size_t i = parallel.size(); i-- > 0;) {
    unsigned d = parallel[i];
    if (i == 0) {
      ivs[d] = linear;
      break;
    }
    Value s = size(d);
    ivs[d] = arith::RemUIOp::create(b, loc, linear, s);
    linear = arith::DivUIOp::create(b, loc, linear, s);
  }

  auto indicesOf = [&](OpBuilder &nb, AffineMap map) {
    // Dimensions without a value yet (reductions, before their loop) do
    // not occur in the maps of outputs; they get a placeholder.
    llvm::SmallVector<Value> operands;
    for (Value iv : ivs)
      operands.push_back(
          iv ? iv : Value(arith::ConstantIndexOp::create(nb, loc, 0)));
    llvm::SmallVector<Value> indices;
    for (AffineExpr e : map.getResults())
      indices.push_back(affine::makeComposedAffineApply(
                            nb, loc, AffineMap::get(map.getNumDims(), 0, e),
                            getAsOpFoldResult(operands))
                            .getResult());
    return indices;
  };

  // Body: the generic's region with loads for its inputs and the current
  // output values as the accumulators.
  Block &region = op.getRegion().front();
  auto emitBody = [&](OpBuilder &nb, ValueRange accumulators) {
    IRMapping map;
    for (OpOperand *input : op.getDpsInputOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(input);
      if (arg.use_empty())
        continue;
      Value value = input->get();
      if (isa<MemRefType>(value.getType()))
        value = memref::LoadOp::create(
            nb, loc, value, indicesOf(nb, op.getMatchingIndexingMap(input)));
      map.map(arg, value);
    }
    for (auto [init, acc] : llvm::zip(op.getDpsInitsMutable(), accumulators))
      map.map(op.getMatchingBlockArgument(&init), acc);
    for (Operation &inner : region.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        map.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      nb.clone(inner, map);
    }
    auto yield = cast<linalg::YieldOp>(region.getTerminator());
    llvm::SmallVector<Value> results;
    for (Value v : yield.getValues())
      results.push_back(map.lookupOrDefault(v));
    return results;
  };

  // Current values of the outputs (only where the body reads them).
  llvm::SmallVector<Value> accumulators;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument arg = op.getMatchingBlockArgument(&init);
    if (arg.use_empty() && reduction.empty()) {
      accumulators.push_back(Value());
      continue;
    }
    accumulators.push_back(memref::LoadOp::create(
        b, loc, init.get(), indicesOf(b, op.getMatchingIndexingMap(&init))));
  }

  llvm::SmallVector<Value> results;
  if (reduction.empty()) {
    results = emitBody(b, accumulators);
  } else {
    // Nested reduction loops carrying the accumulators.
    std::function<llvm::SmallVector<Value>(OpBuilder &, size_t, ValueRange)>
        nest = [&](OpBuilder &nb, size_t level,
                   ValueRange accs) -> llvm::SmallVector<Value> {
      if (level == reduction.size())
        return emitBody(nb, accs);
      unsigned d = reduction[level];
      Value lb = getValueOrCreateConstantIndexOp(nb, loc, ranges[d].offset);
      Value ub = getValueOrCreateConstantIndexOp(nb, loc, ranges[d].size);
      Value step = getValueOrCreateConstantIndexOp(nb, loc, ranges[d].stride);
      auto inner = scf::ForOp::create(
          nb, loc, lb, ub, step, accs,
          [&](OpBuilder &ib, Location, Value iv, ValueRange iter) {
            ivs[d] = iv;
            scf::YieldOp::create(ib, loc, nest(ib, level + 1, iter));
          });
      return llvm::SmallVector<Value>(inner.getResults());
    };
    results = nest(b, 0, accumulators);
  }
  for (auto [init, value] : llvm::zip(op.getDpsInitsMutable(), results))
    memref::StoreOp::create(b, loc, value, init.get(),
                            indicesOf(b, op.getMatchingIndexingMap(&init)));

  barrierAfter(loop);
  op.erase();
  // Independent iterations side by side: a thread's loads overlap (LLVM's
  // NVPTX pipeline does not unroll these guarded loops by itself).
  if (auto strided = dyn_cast<scf::ForOp>(loop))
    if (std::optional<llvm::APInt> trips = strided.getStaticTripCount())
      if (trips->getZExtValue() > 1)
        (void)loopUnrollByFactor(strided,
                                 std::min<uint64_t>(trips->getZExtValue(), 4));
  return success();
}
