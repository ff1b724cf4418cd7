//===- ChunkLoopMapper.h - One chunk loop as a gpu.launch -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// hla-gpu-map-chunk-loops maps each bufferized chunk loop with one
// ChunkLoopMapper; its steps live in one file each:
//
//   ChunkLoopMapper.cpp    checks, the launch, generalization, the order of
//                          the steps, barrier clean-up;
//   MapTma.cpp             token tiles loaded by TMA;
//   MapTensorCores.cpp     contractions on mma.sync / wgmma;
//   MapSharedMemory.cpp    buffers packed into dynamic shared memory;
//   MapDistribute.cpp      linalg ops shared out over the block's threads;
//   MapHelpers.cpp         what several steps use (below);
//   MapChunkLoopsPass.cpp  the pass: host-side preparation, one mapper per
//                          loop.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_LIB_DIALECT_HLA_GPU_CHUNKLOOPMAPPER_H
#define HLA_LIB_DIALECT_HLA_GPU_CHUNKLOOPMAPPER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mlir::hla::gpumap {

/// Shared-memory buffers start on 128-byte boundaries: enough for vector
/// accesses and for the 128-byte swizzle patterns of tensor-core tiles.
constexpr int64_t kSharedAlignment = 128;

/// The gpu dialect's workgroup (shared) address space.
gpu::AddressSpaceAttr workgroupSpace(MLIRContext *ctx);
/// `type` moved to workgroup memory.
MemRefType inWorkgroup(MemRefType type);
/// The bytes of a static buffer of `type`.
int64_t byteSize(MemRefType type);

// Device memory on the launches' stream: each helper opens with `gpu.wait
// async` (the one stream hla's launches use), so allocations, copies and
// frees are ordered with the kernels without synchronising.

/// A device buffer of `type`.
Value allocOnStream(OpBuilder &b, Location loc, MemRefType type,
                    ValueRange dynamicSizes = {}, ValueRange symbols = {});
/// Frees `buffer` once the work queued before is done; the host goes on.
void freeOnStream(OpBuilder &b, Location loc, Value buffer);
/// Copies `from` into `to` (host or device memory) after the work queued
/// before; the host waits for the copy where it reads `to` (`hostReads`).
void copyOnStream(OpBuilder &b, Location loc, Value to, Value from,
                  bool hostReads);

/// Emits a barrier before `op` unless one is already there.
void barrierBefore(Operation *op);
/// Emits a barrier after `op` unless one is already there.
void barrierAfter(Operation *op);
/// A constant inclusive upper bound of an index value, if one is known.
std::optional<int64_t> constantUpperBound(Value value);
/// Moves the side-effect-free definition of `value` (and, first, of its
/// operands) above `point` when it comes after it in the same block.
/// Returns false if that is not possible.
bool defineBefore(Value value, Operation *point);
/// The op that reads or writes memory next to `op` in its block (before it
/// when `before`), skipping side-effect-free ops, barriers, allocations and
/// deallocations, or null.
Operation *adjacentEffectfulOp(Operation *op, bool before);

/// The dimensions of a 2-D contraction C[m, n] (+)= Σ_k A[m, k] B[k, n],
/// in any layout of the three operands.
struct ContractionDims {
  unsigned m, n, k;
  int64_t sizeM, sizeN, sizeK;
  bool accumulates; // the body adds the output's old value
};

/// Recognises `out = out + a * b` (or `a * b`) generics over two parallel
/// dimensions and one reduction, each operand a static 2-D tensor or buffer.
std::optional<ContractionDims> matchContraction(linalg::GenericOp op);

/// A wgmma shared-memory matrix descriptor (inline PTX, side-effecting so
/// that LLVM keeps it next to its wgmma instead of hoisting every
/// descriptor of a loop into registers) for the operand tile at
/// `address + constant` (a shared-memory address, i64): `rows` rows (M or N)
/// of 8-element core matrices stored K-group-major without swizzling, so
/// that core matrices adjacent in M/N are 128 bytes apart and those
/// adjacent in K rows/8 * 128 bytes. Element (row, k) of such a tile sits
/// at element ((k / 8) * rows + row) * 8 + k % 8.
Value wgmmaDescriptor(OpBuilder &b, Location loc, Value address,
                      int64_t constant, int64_t rows);
/// The same with the descriptor's two strides given: `leadingBytes`
/// between core matrices adjacent in K, `strideBytes` between those
/// adjacent in M/N (both K-major and MN-major operands, PTX ISA 9.7.15.5.1.2).
Value wgmmaDescriptorStrides(OpBuilder &b, Location loc, Value address,
                             int64_t constant, int64_t leadingBytes,
                             int64_t strideBytes);
/// One wgmma.mma_async m64`n`k16 (bf16 operands, f32 accumulator `acc` of
/// `n` / 2 values a thread) with A from registers: `a` the thread's four
/// b32 registers of A's 64 x 16 slice, bf16 pairs in the accumulator
/// layout (PTX ISA 9.7.15.5.1.1), B from the descriptor `descB`
/// (`transposeB`: MN-major). `readsD` false starts from zero. NVVM's op
/// takes A as a descriptor only, so this instruction is inline PTX.
Value wgmmaRegisterA(OpBuilder &b, Location loc, Value acc, int64_t n,
                     llvm::ArrayRef<Value> a, Value descB, bool readsD,
                     bool transposeB);

class ChunkLoopMapper {
public:
  ChunkLoopMapper(scf::ForallOp forall, int64_t threads, int64_t maxShared,
                  bool tensorCores, bool wgmma, bool tma, bool tmaPrefetch)
      : forall(forall), threads(threads), maxShared(maxShared),
        tensorCores(tensorCores), wgmma(wgmma), tma(tma),
        tmaPrefetch(tmaPrefetch) {}

  LogicalResult run();

private:
  LogicalResult checkForall();
  gpu::LaunchOp createLaunch();
  /// Finds the token-tile loads that TMA can do (see TmaLoad) and makes
  /// their tensor maps on the host, before the loop.
  void planTmaLoads();
  /// Each planned load: TMA when its tensor map exists, else the copy.
  void lowerTmaLoads(gpu::LaunchOp launch);
  LogicalResult placeInSharedMemory(gpu::LaunchOp launch);
  /// Named linalg ops and memref.copy become linalg.generic.
  LogicalResult generalize(gpu::LaunchOp launch);
  /// Picks the contractions for tensor cores and what each absorbs (the
  /// zero fill before it, the elementwise op after it). Runs before the
  /// buffers are placed, so that an absorbed op's output buffer lives from
  /// the contraction on.
  void planTensorCores(gpu::LaunchOp launch);
  LogicalResult distribute(gpu::LaunchOp launch);
  LogicalResult distributeGeneric(linalg::GenericOp op);
  /// `out += Σ f(x)` over every element (all dimensions reductions, one
  /// 0-d f32 output, an addf combiner): each thread sums a strided share,
  /// warps combine by shuffles and lane 0 of each warp adds its sum to the
  /// output atomically — instead of one thread walking every element while
  /// the block waits. Returns false (and does nothing) for other generics.
  bool distributeFullSum(linalg::GenericOp op);
  /// C (+)= A·B on warp tensor cores (mma.sync m16n8k16, bf16 operands,
  /// f32 accumulation), if `op` is such a contraction of 2-D buffers with
  /// suitable sizes; returns false (and does nothing) otherwise.
  bool lowerContractionToMma(linalg::GenericOp op, bool zeroInit,
                             linalg::GenericOp epilogue);
  /// C (+)= A·B on warpgroup MMA (wgmma m64nNk16, bf16 operands staged in
  /// `stageA`/`stageB`, f32 accumulation).
  void lowerContractionToWgmma(linalg::GenericOp op, bool zeroInit,
                               linalg::GenericOp epilogue, Value stageA,
                               Value stageB);
  void guardScalarStore(memref::StoreOp op);

  scf::ForallOp forall;
  int64_t threads;
  int64_t maxShared;
  bool tensorCores;
  bool wgmma;
  bool tma;
  bool tmaPrefetch;
  Value threadId, numThreads;
  /// A token tile loaded from a [B, T, H, D] function argument: a zero fill
  /// of the [C, D] tile, then a copy of the rows min(T - t0, C) rows from
  /// (b, t0, h): exactly a TMA box of [1, C, 1, D] at (b, t0, h, 0), whose
  /// rows past T TMA fills with zeros.
  struct TmaLoad {
    memref::CopyOp copy;
    Operation *fill;
    Value tile;
    Value map; // the tensor map's device address (0: none)
    int64_t bytes;
  };
  llvm::SmallVector<TmaLoad> tmaLoads;
  /// Buffers that must be in shared memory (TMA destinations, mbarriers).
  llvm::DenseSet<Operation *> sharedOnly;
  struct TensorCorePlan {
    linalg::GenericOp contraction;
    bool zeroInit;
    linalg::GenericOp epilogue;
    /// wgmma's bf16 staging buffers of A and B (null for mma.sync): the
    /// allocations, then their shared-memory views.
    Value stageA, stageB;
  };
  llvm::SmallVector<TensorCorePlan> tensorCorePlans;
};

} // namespace mlir::hla::gpumap

#endif // HLA_LIB_DIALECT_HLA_GPU_CHUNKLOOPMAPPER_H
