//===- MapTensorCores.cpp - Contractions on tensor cores --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// 2-D contractions of a block's program run on tensor cores: mma.sync
// m16n8k16 per warp, or wgmma m64nNk16 per warpgroup with bf16 operands
// staged in shared memory; a following elementwise op can run in the
// contraction's epilogue, on the accumulator.
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

/// Columns of C one warpgroup's wgmma covers: the widest of 64, 32, ... 8
/// that divides N and still gives every warpgroup of the block a task (when
/// one does).
static int64_t wgmmaTileN(const ContractionDims &dims, int64_t warpgroups) {
  int64_t chosen = 0;
  for (int64_t n : {64, 32, 16, 8}) {
    if (dims.sizeN % n)
      continue;
    chosen = n;
    if ((dims.sizeM / 64) * (dims.sizeN / n) >= warpgroups)
      break;
  }
  return chosen;
}

/// Whether a contraction can run on wgmma m64nNk16 in blocks of `threads`.
static bool fitsWgmma(const ContractionDims &dims, int64_t threads) {
  return threads % 128 == 0 && dims.sizeM % 64 == 0 && dims.sizeK % 16 == 0 &&
         wgmmaTileN(dims, threads / 128) != 0;
}

/// The element of the elementwise generic `epilogue` at the position where
/// it reads `C[indices]` (whose value is `value`): loads its other inputs
/// there, evaluates its body and stores its result.
static void emitEpilogueElement(OpBuilder &b, Location loc,
                                linalg::GenericOp epilogue, Value C,
                                llvm::ArrayRef<Value> indices, Value value) {
  // The epilogue's loop indices from C's: its map for C is a permutation.
  OpOperand *fromC = nullptr;
  for (OpOperand *input : epilogue.getDpsInputOperands())
    if (input->get() == C)
      fromC = input;
  AffineMap mapC = epilogue.getMatchingIndexingMap(fromC);
  llvm::SmallVector<Value> ivs(epilogue.getNumLoops());
  for (auto [i, expr] : llvm::enumerate(mapC.getResults()))
    ivs[cast<AffineDimExpr>(expr).getPosition()] = indices[i];
  auto at = [&](AffineMap map) {
    llvm::SmallVector<Value> where;
    for (AffineExpr expr : map.getResults())
      where.push_back(ivs[cast<AffineDimExpr>(expr).getPosition()]);
    return where;
  };
  Block &body = epilogue.getRegion().front();
  IRMapping mapping;
  for (OpOperand &operand : epilogue->getOpOperands()) {
    BlockArgument arg = epilogue.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    if (&operand == fromC) {
      mapping.map(arg, value);
      continue;
    }
    Value v = operand.get();
    if (isa<MemRefType>(v.getType()))
      v = memref::LoadOp::create(b, loc, v,
                                 at(epilogue.getMatchingIndexingMap(&operand)));
    mapping.map(arg, v);
  }
  for (Operation &inner : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, mapping);
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [init, result] :
       llvm::zip(epilogue.getDpsInitsMutable(), yield.getValues()))
    memref::StoreOp::create(b, loc, mapping.lookupOrDefault(result), init.get(),
                            at(epilogue.getMatchingIndexingMap(&init)));
}

/// Whether `op` is a (generalized) fill of `buffer` with 0.
static bool isZeroFillOf(Operation *op, Value buffer) {
  auto fill = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!fill || fill.getNumDpsInits() != 1 || fill.getNumDpsInputs() != 1 ||
      fill.getDpsInitOperand(0)->get() != buffer ||
      fill.getNumLoops() != fill.getNumParallelLoops())
    return false;
  auto yield = cast<linalg::YieldOp>(fill.getRegion().front().getTerminator());
  if (yield.getValues()[0] != fill.getRegion().front().getArgument(0))
    return false;
  auto constant =
      fill.getDpsInputOperand(0)->get().getDefiningOp<arith::ConstantOp>();
  auto value = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  return value && value.getValue().isZero();
}

/// An elementwise op right after `contraction` that is the only other
/// reader of its output C, reads C through a permutation and writes a
/// different buffer: it can run in the contraction's epilogue.
static linalg::GenericOp epilogueOf(linalg::GenericOp contraction) {
  Value C = contraction.getDpsInitOperand(0)->get();
  auto next = dyn_cast_or_null<linalg::GenericOp>(
      adjacentEffectfulOp(contraction, false));
  if (!next || next.getNumLoops() != next.getNumParallelLoops() ||
      next.getNumDpsInits() != 1 || next.getDpsInitOperand(0)->get() == C)
    return nullptr;
  int readsOfC = 0;
  for (OpOperand *input : next.getDpsInputOperands())
    if (input->get() == C) {
      ++readsOfC;
      if (!next.getMatchingIndexingMap(input).isPermutation())
        return nullptr;
    }
  if (readsOfC != 1)
    return nullptr;
  for (OpOperand &operand : next->getOpOperands())
    if (!next.getMatchingIndexingMap(&operand).isProjectedPermutation())
      return nullptr;
  // C must not be read after the epilogue: it is a buffer of this block (a
  // fresh one per loop iteration), and its other users come before the
  // contraction.
  Block *block = contraction->getBlock();
  Operation *def = C.getDefiningOp();
  if (!def || def->getBlock() != block)
    return nullptr;
  for (Operation *user : C.getUsers()) {
    if (user == contraction || user == next)
      continue;
    Operation *anchor = block->findAncestorOpInBlock(*user);
    if (!anchor || !anchor->isBeforeInBlock(contraction))
      return nullptr;
  }
  // Other warps still read A and B while a warp runs its epilogue.
  Value out = next.getDpsInitOperand(0)->get();
  for (OpOperand *input : contraction.getDpsInputOperands())
    if (input->get() == out)
      return nullptr;
  // The epilogue's buffers (views of shared memory, made between the two
  // ops) must exist when the contraction runs.
  for (Value operand : next->getOperands())
    if (!defineBefore(operand, contraction))
      return nullptr;
  return next;
}

/// The indices into a contraction operand with indexing map `map` at the
/// loop position (m, n, k) (null for a dimension the map does not use).
static llvm::SmallVector<Value> contractionIndices(const ContractionDims &dims,
                                                   AffineMap map, Value m,
                                                   Value n, Value k) {
  llvm::SmallVector<Value> ivs(3);
  ivs[dims.m] = m;
  ivs[dims.n] = n;
  ivs[dims.k] = k;
  llvm::SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
  return indices;
}

/// The first row and column of C that tensor-core task `task` computes:
/// tasks run row-major over blocks of `rows` x `cols`, `groupsN` per row
/// of blocks.
static std::pair<Value, Value> taskOrigin(OpBuilder &b, Location loc,
                                          Value task, int64_t groupsN,
                                          int64_t rows, int64_t cols) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value row = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, task, index(groupsN)),
      index(rows));
  Value col = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, task, index(groupsN)),
      index(cols));
  return {row, col};
}

/// One f32 accumulator element back to C at `indices` (in C's element
/// type), or through the elementwise op that consumes it.
static void storeAccumulator(OpBuilder &b, Location loc, Value value, Value C,
                             llvm::ArrayRef<Value> indices,
                             linalg::GenericOp epilogue) {
  Type outElement = cast<MemRefType>(C.getType()).getElementType();
  if (outElement != value.getType())
    value = arith::TruncFOp::create(b, loc, outElement, value);
  if (epilogue)
    emitEpilogueElement(b, loc, epilogue, C, indices, value);
  else
    memref::StoreOp::create(b, loc, value, C, indices);
}

bool ChunkLoopMapper::lowerContractionToMma(linalg::GenericOp op, bool zeroInit,
                                            linalg::GenericOp epilogue) {
  std::optional<ContractionDims> dims = matchContraction(op);
  if (!dims)
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i32 = b.getI32Type(), bf16 = b.getBF16Type();
  barrierBefore(op);

  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  Value warpSize = index(b, 32);
  Value warp = arith::DivUIOp::create(b, loc, threadId, warpSize);
  Value lane = arith::RemUIOp::create(b, loc, threadId, warpSize);
  Value group = arith::DivUIOp::create(b, loc, lane, index(b, 4));
  Value pairCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, index(b, 4)), index(b, 2));
  Value numWarps = arith::DivUIOp::create(b, loc, numThreads, warpSize);

  // A warp's task: 16 rows by `perWarp` tiles of 8 columns, so that one A
  // fragment serves several mma.sync.
  int64_t tilesN = dims->sizeN / 8;
  int64_t perWarp = 1;
  for (int64_t p : {4, 2})
    if (tilesN % p == 0) {
      perWarp = p;
      break;
    }
  int64_t groupsN = tilesN / perWarp;
  int64_t tasks = (dims->sizeM / 16) * groupsN;

  Value A = op.getDpsInputOperand(0)->get();
  Value B = op.getDpsInputOperand(1)->get();
  Value C = op.getDpsInitOperand(0)->get();
  AffineMap mapA = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap mapB = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto load = [&](OpBuilder &nb, Value buffer, AffineMap map, Value m, Value n,
                  Value k) -> Value {
    return memref::LoadOp::create(nb, loc, buffer,
                                  contractionIndices(*dims, map, m, n, k));
  };
  // Two elements as the bf16 pair of one 32-bit register (first in the low
  // half).
  auto pack = [&](OpBuilder &nb, Value lo, Value hi) -> Value {
    auto half = [&](Value v) -> Value {
      if (v.getType() != bf16) {
        if (v.getType() != f32)
          v = arith::ExtFOp::create(nb, loc, f32, v);
        v = arith::TruncFOp::create(nb, loc, bf16, v);
      }
      Value bits = arith::BitcastOp::create(nb, loc, nb.getI16Type(), v);
      return arith::ExtUIOp::create(nb, loc, i32, bits);
    };
    Value high = arith::ShLIOp::create(
        nb, loc, half(hi),
        arith::ConstantIntOp::create(nb, loc, i32, 16).getResult());
    return arith::OrIOp::create(nb, loc, half(lo), high);
  };
  auto add = [&](OpBuilder &nb, Value a, int64_t c) -> Value {
    return arith::AddIOp::create(nb, loc, a, index(nb, c));
  };

  auto taskLoop = scf::ForOp::create(b, loc, warp, index(b, tasks), numWarps);
  {
    OpBuilder tb = OpBuilder::atBlockBegin(taskLoop.getBody());
    Value task = taskLoop.getInductionVar();
    auto origin = taskOrigin(tb, loc, task, groupsN, 16, perWarp * 8);
    Value row0 = origin.first, col0 = origin.second;
    Value rowLo = arith::AddIOp::create(tb, loc, row0, group);
    Value rowHi = add(tb, rowLo, 8);
    // Accumulators start from the output (C += A·B), or from zero when C
    // was just zero-filled (the fill is then left out).
    llvm::SmallVector<Value> init;
    llvm::SmallVector<Value> cols;
    Value zero = arith::ConstantOp::create(tb, loc, tb.getF32FloatAttr(0));
    for (int64_t t = 0; t < perWarp; ++t) {
      Value col = arith::AddIOp::create(tb, loc, add(tb, col0, t * 8), pairCol);
      cols.push_back(col);
      for (Value row : {rowLo, rowHi})
        for (int64_t e = 0; e < 2; ++e) {
          if (zeroInit) {
            init.push_back(zero);
            continue;
          }
          Value v = load(tb, C, mapC, row, add(tb, col, e), Value());
          if (v.getType() != f32)
            v = arith::ExtFOp::create(tb, loc, f32, v);
          init.push_back(v);
        }
    }
    auto kLoop = scf::ForOp::create(
        tb, loc, index(tb, 0), index(tb, dims->sizeK), index(tb, 16), init,
        [&](OpBuilder &kb, Location, Value k0, ValueRange accs) {
          Value kLo = arith::AddIOp::create(kb, loc, k0, pairCol);
          Value kHi = add(kb, kLo, 8);
          auto a = [&](Value row, Value k) {
            return pack(kb, load(kb, A, mapA, row, Value(), k),
                        load(kb, A, mapA, row, Value(), add(kb, k, 1)));
          };
          llvm::SmallVector<Value> fragA = {a(rowLo, kLo), a(rowHi, kLo),
                                            a(rowLo, kHi), a(rowHi, kHi)};
          Type resultType = LLVM::LLVMStructType::getLiteral(
              ctx, llvm::SmallVector<Type>(4, f32));
          llvm::SmallVector<Value> next;
          for (int64_t t = 0; t < perWarp; ++t) {
            Value col =
                add(kb, arith::AddIOp::create(kb, loc, col0, group), t * 8);
            auto bFrag = [&](Value k) {
              return pack(kb, load(kb, B, mapB, Value(), col, k),
                          load(kb, B, mapB, Value(), col, add(kb, k, 1)));
            };
            llvm::SmallVector<Value> fragB = {bFrag(kLo), bFrag(kHi)};
            auto mma = NVVM::MmaOp::create(
                kb, loc, resultType, fragA, fragB, accs.slice(t * 4, 4),
                llvm::ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
                std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                              NVVM::MMATypes::bf16},
                std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                               NVVM::MMALayout::col});
            for (int64_t e = 0; e < 4; ++e)
              next.push_back(LLVM::ExtractValueOp::create(
                  kb, loc, mma.getResult(), llvm::ArrayRef<int64_t>{e}));
          }
          scf::YieldOp::create(kb, loc, next);
        });
    // The accumulator fragment back to the output, or through the
    // elementwise op that consumes it (which then needs no pass of its own).
    unsigned r = 0;
    for (int64_t t = 0; t < perWarp; ++t)
      for (Value row : {rowLo, rowHi})
        for (int64_t e = 0; e < 2; ++e)
          storeAccumulator(tb, loc, kLoop.getResult(r++), C,
                           contractionIndices(*dims, mapC, row,
                                              add(tb, cols[t], e), Value()),
                           epilogue);
  }
  barrierAfter(taskLoop);
  op.erase();
  if (epilogue)
    epilogue.erase();
  return true;
}

// wgmma reads A (M x K) and B (as N x K) from shared memory in units of
// "core matrices": 8 rows of 16 bytes (8 bf16 of K), each 128 contiguous
// bytes. The staging buffers hold them K-group-major: core matrix (r, g) of
// rows 8r.. and K columns 8g.. starts at byte (g * rows/8 + r) * 128, so
// core matrices adjacent in M/N are 128 bytes apart (the descriptor's
// stride byte offset) and those adjacent in K rows/8 * 128 bytes (its
// leading byte offset).
void ChunkLoopMapper::lowerContractionToWgmma(linalg::GenericOp op,
                                              bool zeroInit,
                                              linalg::GenericOp epilogue,
                                              Value stageA, Value stageB) {
  ContractionDims dims = *matchContraction(op);
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i64 = b.getI64Type(), bf16 = b.getBF16Type();
  barrierBefore(op);
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  auto add = [&](OpBuilder &nb, Value a, int64_t c) -> Value {
    return arith::AddIOp::create(nb, loc, a, index(nb, c));
  };

  Value A = op.getDpsInputOperand(0)->get();
  Value B = op.getDpsInputOperand(1)->get();
  Value C = op.getDpsInitOperand(0)->get();
  AffineMap mapA = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap mapB = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto indicesOf = [&](AffineMap map, Value m, Value n, Value k) {
    return contractionIndices(dims, map, m, n, k);
  };

  // 1. Staging: a thread copies one 16-byte core-matrix row at a time
  // (8 consecutive K of one row of A or column of B). Consecutive threads
  // take consecutive rows, whose 16-byte slots are adjacent.
  auto stage = [&](Value source, AffineMap map, bool isA, int64_t rows,
                   Value staged) {
    int64_t units = rows * (dims.sizeK / 8);
    auto loop =
        scf::ForOp::create(b, loc, threadId, index(b, units), numThreads);
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    Value unit = loop.getInductionVar();
    Value row = arith::RemUIOp::create(lb, loc, unit, index(lb, rows));
    Value k0 = arith::MulIOp::create(
        lb, loc, arith::DivUIOp::create(lb, loc, unit, index(lb, rows)),
        index(lb, 8));
    llvm::SmallVector<Value> elements;
    for (int64_t j = 0; j < 8; ++j) {
      Value k = add(lb, k0, j);
      Value v = memref::LoadOp::create(lb, loc, source,
                                       isA ? indicesOf(map, row, Value(), k)
                                           : indicesOf(map, Value(), row, k));
      if (v.getType() != bf16) {
        if (v.getType() != f32)
          v = arith::ExtFOp::create(lb, loc, f32, v);
        v = arith::TruncFOp::create(lb, loc, bf16, v);
      }
      elements.push_back(v);
    }
    // Element (row, k) sits at (k/8 * rows + row) * 8 + k % 8.
    Value at = arith::MulIOp::create(lb, loc, unit, index(lb, 8));
    auto vecType = VectorType::get({8}, bf16);
    Value vec = vector::FromElementsOp::create(lb, loc, vecType, elements);
    vector::StoreOp::create(lb, loc, vec, staged, ValueRange{at});
  };
  stage(A, mapA, /*isA=*/true, dims.sizeM, stageA);
  stage(B, mapB, /*isA=*/false, dims.sizeN, stageB);
  // The staged tiles are read by wgmma through the async proxy: the
  // threads' generic-proxy writes are made visible to it before the
  // barrier.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);

  // 2. Descriptors: start address, leading (K) and stride (M/N) byte
  // offsets, all in units of 16 bytes; no swizzling (bits 62-63 zero). The
  // staging buffers are views at constant offsets of the dynamic
  // shared-memory window, so a descriptor is the window's address, the
  // task's first row and constants. It is built right before its wgmma in
  // (side-effecting) inline PTX: were it plain arithmetic, LLVM would hoist
  // every descriptor of every contraction out of the chunk loop and keep
  // them all in registers (spills).
  auto windowOf = [&](Value staged, int64_t &offset) -> Value {
    auto view = staged.getDefiningOp<memref::ViewOp>();
    std::optional<int64_t> shift =
        view ? getConstantIntValue(view.getByteShift()) : std::nullopt;
    assert(shift && "wgmma staging buffers are views of the window");
    offset = *shift;
    return view.getSource();
  };
  int64_t offsetA = 0, offsetB = 0;
  Value window = windowOf(stageA, offsetA);
  (void)windowOf(stageB, offsetB);
  Value windowAddress = arith::IndexCastUIOp::create(
      b, loc, i64,
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, window));
  auto descriptor = [&](OpBuilder &nb, Value rowBytes, int64_t constant,
                        int64_t rows) -> Value {
    Value address = arith::AddIOp::create(nb, loc, windowAddress, rowBytes);
    return wgmmaDescriptor(nb, loc, address, constant, rows);
  };

  // 3. A warpgroup's task: 64 rows by `tileN` columns of C.
  int64_t warpgroups = threads / 128;
  int64_t tileN = wgmmaTileN(dims, warpgroups);
  int64_t groupsN = dims.sizeN / tileN;
  int64_t tasks = (dims.sizeM / 64) * groupsN;
  Value lane = arith::RemUIOp::create(b, loc, threadId, index(b, 32));
  Value warpInGroup = arith::RemUIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, threadId, index(b, 32)),
      index(b, 4));
  Value group = arith::DivUIOp::create(b, loc, lane, index(b, 4));
  Value pairCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, index(b, 4)), index(b, 2));
  Value warpgroup = arith::DivUIOp::create(b, loc, threadId, index(b, 128));
  auto taskLoop = scf::ForOp::create(b, loc, warpgroup, index(b, tasks),
                                     index(b, warpgroups));
  OpBuilder tb = OpBuilder::atBlockBegin(taskLoop.getBody());
  Value task = taskLoop.getInductionVar();
  auto origin = taskOrigin(tb, loc, task, groupsN, 64, tileN);
  Value row0 = origin.first, col0 = origin.second;
  // This thread's accumulator elements: per 8 columns, rows r and r + 8 of
  // its warp's 16, two adjacent columns each (mma.sync's C fragment).
  Value rowLo = arith::AddIOp::create(
      tb, loc,
      arith::AddIOp::create(
          tb, loc, row0,
          arith::MulIOp::create(tb, loc, warpInGroup, index(tb, 16))),
      group);
  Value rowHi = add(tb, rowLo, 8);
  llvm::SmallVector<std::array<Value, 3>> elements; // row, column, init
  Value zero = arith::ConstantOp::create(tb, loc, tb.getF32FloatAttr(0));
  for (int64_t t = 0; t < tileN / 8; ++t) {
    Value col = arith::AddIOp::create(tb, loc, add(tb, col0, t * 8), pairCol);
    for (Value row : {rowLo, rowHi})
      for (int64_t e = 0; e < 2; ++e) {
        Value c = add(tb, col, e);
        Value v = zero;
        if (!zeroInit) {
          v = memref::LoadOp::create(tb, loc, C, indicesOf(mapC, row, c, {}));
          if (v.getType() != f32)
            v = arith::ExtFOp::create(tb, loc, f32, v);
        }
        elements.push_back({row, c, v});
      }
  }
  Type accType = LLVM::LLVMStructType::getLiteral(
      ctx, llvm::SmallVector<Type>(elements.size(), f32));
  Value acc = LLVM::UndefOp::create(tb, loc, accType);
  for (auto [i, element] : llvm::enumerate(elements))
    acc = LLVM::InsertValueOp::create(tb, loc, acc, element[2],
                                      llvm::ArrayRef<int64_t>{int64_t(i)});
  // The task's first core matrices: 8 rows each, 128 bytes apart.
  auto rowBytes = [&](Value firstRow) -> Value {
    return arith::IndexCastUIOp::create(
        tb, loc, i64, arith::MulIOp::create(tb, loc, firstRow, index(tb, 16)));
  };
  Value rowBytesA = rowBytes(row0), rowBytesB = rowBytes(col0);
  llvm::SmallVector<std::pair<Value, Value>> descriptors;
  for (int64_t k0 = 0; k0 < dims.sizeK; k0 += 16) {
    // K groups 8 wide: k0 / 8 of them before, rows/8 core matrices each.
    auto atK = [&](int64_t rows) { return (k0 / 8) * (rows / 8) * 128; };
    descriptors.push_back(
        {descriptor(tb, rowBytesA, offsetA + atK(dims.sizeM), dims.sizeM),
         descriptor(tb, rowBytesB, offsetB + atK(dims.sizeN), dims.sizeN)});
  }
  NVVM::WgmmaFenceAlignedOp::create(tb, loc);
  for (auto [descA, descB] : descriptors)
    acc = NVVM::WgmmaMmaAsyncOp::create(
        tb, loc, accType, acc, descA, descB,
        NVVM::MMAShapeAttr::get(ctx, 64, tileN, 16), NVVM::WGMMATypes::bf16,
        NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one,
        NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
        NVVM::MMALayout::col,
        /*satfinite=*/nullptr);
  NVVM::WgmmaGroupSyncAlignedOp::create(tb, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(tb, loc, 0);
  for (auto [i, element] : llvm::enumerate(elements))
    storeAccumulator(tb, loc,
                     LLVM::ExtractValueOp::create(
                         tb, loc, acc, llvm::ArrayRef<int64_t>{int64_t(i)}),
                     C, indicesOf(mapC, element[0], element[1], {}), epilogue);
  barrierAfter(taskLoop);
  op.erase();
  if (epilogue)
    epilogue.erase();
}

void ChunkLoopMapper::planTensorCores(gpu::LaunchOp launch) {
  if (!tensorCores)
    return;
  llvm::SmallVector<linalg::GenericOp> generics;
  launch.getBody().walk([&](linalg::GenericOp g) { generics.push_back(g); });
  llvm::DenseSet<Operation *> taken;
  for (linalg::GenericOp g : generics) {
    if (taken.contains(g) || !matchContraction(g))
      continue;
    Value C = g.getDpsInitOperand(0)->get();
    Operation *before = adjacentEffectfulOp(g, /*before=*/true);
    bool zeroInit =
        before && !taken.contains(before) && isZeroFillOf(before, C);
    linalg::GenericOp epilogue = epilogueOf(g);
    if (epilogue && (taken.contains(epilogue) || matchContraction(epilogue)))
      epilogue = nullptr;
    if (zeroInit)
      before->erase();
    taken.insert(g);
    if (epilogue)
      taken.insert(epilogue);
    TensorCorePlan plan{g, zeroInit, epilogue, {}, {}};
    std::optional<ContractionDims> dims = matchContraction(g);
    if (wgmma && fitsWgmma(*dims, threads)) {
      // Staging buffers for the operands in wgmma's core-matrix layout; they
      // live for the contraction (see placeInSharedMemory).
      OpBuilder b(g);
      Type bf16 = b.getBF16Type();
      plan.stageA = memref::AllocOp::create(
          b, g.getLoc(), MemRefType::get({dims->sizeM * dims->sizeK}, bf16));
      plan.stageB = memref::AllocOp::create(
          b, g.getLoc(), MemRefType::get({dims->sizeN * dims->sizeK}, bf16));
    }
    tensorCorePlans.push_back(plan);
  }
}
