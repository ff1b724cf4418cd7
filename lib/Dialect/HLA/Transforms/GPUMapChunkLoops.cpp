//===- GPUMapChunkLoops.cpp - Chunk loops as GPU thread blocks ----*- C++ -*-===//
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
// hla-gpu-finalize-kernels patches the LLVM global that
// gpu.dynamic_shared_memory lowers to and sets the kernels' occupancy hint
// (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "hla/Dialect/HLA/Transforms/Passes.h"

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
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::hla {
#define GEN_PASS_DEF_HLAGPUMAPCHUNKLOOPSPASS
#define GEN_PASS_DEF_HLAGPUFINALIZEKERNELSPASS
#include "hla/Dialect/HLA/Transforms/Passes.h.inc"
} // namespace mlir::hla

using namespace mlir;
using namespace mlir::hla;

namespace {

/// Shared-memory buffers start on 128-byte boundaries: enough for vector
/// accesses and for the 128-byte swizzle patterns of tensor-core tiles.
constexpr int64_t kSharedAlignment = 128;

static gpu::AddressSpaceAttr workgroupSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

//===----------------------------------------------------------------------===//
// Device memory on the launches' stream
//===----------------------------------------------------------------------===//
//
// Each helper opens with `gpu.wait async` (mgpuStreamCreate: the one stream
// hla's launches use), so allocations, copies and frees are ordered with
// the kernels without synchronising; a copy waits for its data.

/// A device buffer of `type`.
static Value allocOnStream(OpBuilder &b, Location loc, MemRefType type,
                           ValueRange dynamicSizes = {},
                           ValueRange symbols = {}) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value ready =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
  return gpu::AllocOp::create(b, loc, type, tokenType, ValueRange{ready},
                              dynamicSizes, symbols, /*hostShared=*/false)
      .getMemref();
}

/// Frees `buffer` once the work queued before is done.
static void freeOnStream(OpBuilder &b, Location loc, Value buffer) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value ready =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
  Value freed = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{ready},
                                       buffer)
                    .getAsyncToken();
  gpu::WaitOp::create(b, loc, Type(), ValueRange{freed});
}

/// Copies `from` into `to` (host or device memory) and waits for it.
static void copyOnStream(OpBuilder &b, Location loc, Value to, Value from) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value ready =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
  Value copied = gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{ready},
                                       to, from)
                     .getAsyncToken();
  gpu::WaitOp::create(b, loc, Type(), ValueRange{copied});
}

/// `type` moved to workgroup memory.
static MemRefType inWorkgroup(MemRefType type) {
  return MemRefType::get(type.getShape(), type.getElementType(),
                         type.getLayout(),
                         workgroupSpace(type.getContext()));
}

static int64_t byteSize(MemRefType type) {
  int64_t bits = type.getElementTypeBitWidth();
  return (type.getNumElements() * bits + 7) / 8;
}

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
      if (def && (def->hasTrait<OpTrait::ConstantLike>() ||
                  isa<gpu::AllocOp>(def)))
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

static Operation *adjacentEffectfulOp(Operation *op, bool before);
static bool defineBefore(Value value, Operation *point);

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
  llvm::DenseMap<std::pair<Value, int64_t>, Value> maps;
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
    int32_t code = element.isF32() ? 0 : element.isF16() ? 1
                   : element.isBF16() ? 2 : -1;
    auto tile = target.getSource().getDefiningOp<memref::AllocOp>();
    if (code < 0 || !tile || tile.getType().getRank() != 2 ||
        tile.getType().getElementType() != element)
      continue;
    int64_t C = tile.getType().getDimSize(0), D = tile.getType().getDimSize(1);
    int64_t T = argType.getDimSize(1);
    if (D != argType.getDimSize(3) || C > 256 || D > 256 ||
        (D * elementBytes) % 16)
      continue;
    // Source [b, t0, h, 0] [1, len, 1, D] unit strides; target [0, 0]
    // [len, D].
    llvm::SmallVector<OpFoldResult> offsets = source.getMixedOffsets(),
                                    sizes = source.getMixedSizes();
    if (!source.hasUnitStride() || !target.hasUnitStride() ||
        getConstantIntValue(offsets[3]) != 0 ||
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
    auto zero = linalgFill ? linalgFill.getInputs()[0]
                                 .getDefiningOp<arith::ConstantOp>()
                           : nullptr;
    auto zeroValue = zero ? dyn_cast<FloatAttr>(zero.getValue()) : nullptr;
    if (!linalgFill || linalgFill.getOutputs()[0] != tile.getResult() ||
        !zeroValue || !zeroValue.getValue().isZero())
      continue;

    // The tensor map, made on the host once per argument and box.
    Value &map = maps[{arg, C}];
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
        auto decl = func::FuncOp::create(top, loc, "hla_cuda_tensor_map",
                                         fnType);
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
    tmaLoads.push_back({copy, fill, tile.getResult(), map,
                        C * D * elementBytes});
  }
}

/// An LLVM pointer in `space` to byte `offset` (+ `index` x `scale`) of
/// the buffer `memref` (from its aligned pointer).
static Value pointerTo(OpBuilder &b, Location loc, Value memref,
                       unsigned space, int64_t offset = 0,
                       Value index = Value(), int64_t scale = 0) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc,
                                                                 memref);
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
    auto alloc = memref::AllocOp::create(
        before, loc, MemRefType::get({2}, b.getI64Type()));
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
    // The box's position: the source's offsets (b, t0, h) — read now, as
    // the forall's induction variables became the launch's.
    llvm::SmallVector<Value> position;
    {
      OpBuilder sb(source);
      for (int i : {0, 1, 2})
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
      prefetch = llvm::all_of(position, [&](Value v) {
        return evaluableAtIteration(v, loop);
      });
    auto tileAlloc = load.tile.getDefiningOp<memref::AllocOp>();
    if (prefetch && tileAlloc &&
        tileAlloc->getBlock() == loop.getBody()) {
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
              llvm::ArrayRef<OpFoldResult>{lb.getIndexAttr(1),
                                           lb.getIndexAttr(1),
                                           lb.getIndexAttr(1)})),
          both,
          llvm::ArrayRef<OpFoldResult>{odd, lb.getIndexAttr(0),
                                       lb.getIndexAttr(0)},
          llvm::ArrayRef<OpFoldResult>{
              lb.getIndexAttr(1), lb.getIndexAttr(tileType.getDimSize(0)),
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
          NVVM::MemScopeKindAttr::get(ib.getContext(),
                                      NVVM::MemScopeKind::CTA),
          ib.getBoolAttr(false), /*predicate=*/Value());
      Value descriptor = LLVM::IntToPtrOp::create(
          ib, at, LLVM::LLVMPointerType::get(ib.getContext()), load.map);
      // Coordinates innermost first: (0, h, t0, b).
      llvm::SmallVector<Value> coordinates = {c32(ib, 0)};
      for (int i : {2, 1, 0})
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
      Value nonEmpty = arith::CmpIOp::create(
          pb, at, arith::CmpIPredicate::slt, loop.getLowerBound(),
          loop.getUpperBound());
      Value go = arith::AndIOp::create(
          pb, at, arith::AndIOp::create(pb, at, first, haveMap), nonEmpty);
      auto prologue = scf::IfOp::create(pb, at, go, /*withElseRegion=*/false);
      OpBuilder ib(prologue.thenBlock()->getTerminator());
      IRMapping mapping;
      llvm::SmallVector<Value> where;
      for (Value v : position)
        where.push_back(atIteration(ib, v, loop, loop.getLowerBound(), mapping));
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
      issueLoad(ib, where,
                arith::SubIOp::create(ib, at, cIndex(ib, 1), slot));
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

/// The position of every op under `root` in a pre-order walk, and the
/// position of the last op nested in it.
struct ProgramOrder {
  llvm::DenseMap<Operation *, int64_t> begin, end;

  explicit ProgramOrder(Operation *root) {
    int64_t counter = 0;
    root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      begin[op] = counter++;
    });
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
          subview.getType().getShape(), sourceType,
          subview.getMixedOffsets(), subview.getMixedSizes(),
          subview.getMixedStrides());
      subview.getResult().setType(cast<MemRefType>(inferred));
      if (failed(retypeViews(subview.getResult())))
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
                     memref::CopyOp, linalg::LinalgOp, memref::SubViewOp>(
              user);
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
          (!largest || byteSize(i.alloc.getType()) >
                                        byteSize(largest->alloc.getType())))
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
    std::optional<int64_t> blocks =
        getConstantIntValue(launch.getGridSizeX());
    if (!blocks)
      return launch.emitOpError(
          "hla-gpu-map-chunk-loops: a device-memory scratch buffer needs a "
          "static number of blocks");
    OpBuilder host(launch);
    // Recorded for the schedule choice (hla.device_scratch: state streamed
    // through device memory).
    launch->getParentOfType<func::FuncOp>()->setAttr(
        "hla.device_scratch", host.getUnitAttr());
    scratchBuffer = allocOnStream(
        host, loc, MemRefType::get({*blocks * scratch}, host.getI8Type()));
    host.setInsertionPointAfter(launch);
    freeOnStream(host, loc, scratchBuffer);
    scratchBase = arith::MulIOp::create(
        b, loc, launch.getBlockIds().x,
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
          b, allocLoc, whole, llvm::ArrayRef<int64_t>{0, 0},
          type.getShape(), llvm::ArrayRef<int64_t>{1, 1});
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

/// Emits a barrier before `op` unless one is already there.
static void barrierBefore(Operation *op) {
  if (Operation *prev = op->getPrevNode())
    if (isa<gpu::BarrierOp>(prev))
      return;
  OpBuilder b(op);
  gpu::BarrierOp::create(b, op->getLoc());
}

static void barrierAfter(Operation *op) {
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
static std::optional<int64_t> constantUpperBound(Value value) {
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
        Value sum = arith::AddFOp::create(nb, l, acc[0],
                                          map.lookupOrDefault(term));
        scf::YieldOp::create(nb, l, sum);
      });
  // The warp's sum in every lane (butterfly shuffles).
  Value sum = share.getResult(0);
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 32);
  };
  for (int64_t offset = 16; offset >= 1; offset /= 2) {
    Value other = NVVM::ShflOp::create(b, loc, f32, i32(-1), sum, i32(offset),
                                       i32(31), NVVM::ShflKind::bfly,
                                       UnitAttr())
                      .getResult();
    sum = arith::AddFOp::create(b, loc, sum, other);
  }
  Value lane = arith::RemUIOp::create(b, loc, threadId,
                                      arith::ConstantIndexOp::create(b, loc, 32));
  Value first = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, lane,
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
    (kind == utils::IteratorType::parallel ? parallel : reduction)
        .push_back(d);
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
    auto strided = scf::ForOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, 0),
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
      operands.push_back(iv ? iv
                            : Value(arith::ConstantIndexOp::create(nb, loc, 0)));
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


/// The dimensions of a 2-D contraction C[m, n] (+)= Σ_k A[m, k] B[k, n],
/// in any layout of the three buffers.
struct ContractionDims {
  unsigned m, n, k;
  int64_t sizeM, sizeN, sizeK;
  bool accumulates; // the body adds the output's old value
};

/// Recognises `out = out + a * b` (or `a * b`) generics over two parallel
/// dimensions and one reduction, each operand a 2-D buffer.
static std::optional<ContractionDims> matchContraction(linalg::GenericOp op) {
  if (op.getNumLoops() != 3 || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
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
  if (!mul ||
      !((mul.getLhs() == body.getArgument(0) &&
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
  auto uses = [](AffineMap map, unsigned d) {
    return map.isFunctionOfDim(d);
  };
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
    memref::StoreOp::create(b, loc, mapping.lookupOrDefault(result),
                            init.get(),
                            at(epilogue.getMatchingIndexingMap(&init)));
}

/// Moves the side-effect-free definition of `value` (and, first, of its
/// operands) above `point` when it comes after it in the same block.
/// Returns false if that is not possible.
static bool defineBefore(Value value, Operation *point) {
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
static Operation *adjacentEffectfulOp(Operation *op, bool before) {
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
  auto next =
      dyn_cast_or_null<linalg::GenericOp>(adjacentEffectfulOp(contraction,
                                                              false));
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

bool ChunkLoopMapper::lowerContractionToMma(linalg::GenericOp op,
                                            bool zeroInit,
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
      Value col = arith::AddIOp::create(tb, loc, add(tb, col0, t * 8),
                                        pairCol);
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
            Value col = add(kb, arith::AddIOp::create(kb, loc, col0, group),
                            t * 8);
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
  Type f32 = b.getF32Type(), i64 = b.getI64Type(),
       bf16 = b.getBF16Type();
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
      Value v = memref::LoadOp::create(
          lb, loc, source,
          isA ? indicesOf(map, row, Value(), k) : indicesOf(map, Value(), row, k));
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
    int64_t leading = rows / 8 * 128, stride = 128;
    uint64_t fields = (uint64_t(leading >> 4) << 16) |
                      (uint64_t(stride >> 4) << 32);
    std::string text = "{ .reg .b64 t; add.s64 t, $1, " +
                       std::to_string(constant) +
                       "; shr.b64 t, t, 4; and.b64 t, t, 16383; or.b64 $0, "
                       "t, " +
                       std::to_string(fields) + "; }";
    Value address = arith::AddIOp::create(nb, loc, windowAddress, rowBytes);
    return LLVM::InlineAsmOp::create(
               nb, loc, i64, ValueRange{address}, text, "=l,l",
               /*has_side_effects=*/true, /*is_align_stack=*/false,
               LLVM::tailcallkind::TailCallKind::None,
               /*asm_dialect=*/nullptr, /*operand_attrs=*/nullptr)
        .getResult(0);
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
        NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32,
        NVVM::WGMMAScaleOut::one, NVVM::WGMMAScaleIn::one,
        NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row, NVVM::MMALayout::col,
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
      auto linalgCopy = linalg::CopyOp::create(rewriter, copy.getLoc(),
                                               copy.getSource(),
                                               copy.getTarget());
      rewriter.eraseOp(copy);
      op = linalgCopy;
    }
    rewriter.setInsertionPoint(op);
    if (failed(linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(op))))
      return op->emitOpError("hla-gpu-map-chunk-loops: cannot generalize");
  }
  return success();
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
    bool zeroInit = before && !taken.contains(before) && isZeroFillOf(before, C);
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

struct HLAGPUMapChunkLoopsPass
    : public hla::impl::HLAGPUMapChunkLoopsPassBase<HLAGPUMapChunkLoopsPass> {
  using HLAGPUMapChunkLoopsPassBase::HLAGPUMapChunkLoopsPassBase;

  /// `auto`: tensor cores (bf16 operands) when the loop reads 16-bit float
  /// data from outside — the op's precision is then 16-bit and rounding its
  /// chunk intermediates to bf16 stays within it; float32 ops keep exact
  /// float32 arithmetic.
  bool useTensorCores(scf::ForallOp forall) {
    if (tensorCores == "on")
      return true;
    if (tensorCores == "off")
      return false;
    bool halfInputs = false;
    forall.getBody()->walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (auto type = dyn_cast<MemRefType>(operand.getType()))
          if (!forall.getRegion().isAncestor(operand.getParentRegion()) &&
              (type.getElementType().isBF16() ||
               type.getElementType().isF16()))
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
      Value device = allocOnStream(b, loc, alloc.getType(),
                                   alloc.getDynamicSizes(),
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
      copyOnStream(b, loc, device, global.getResult());
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
      copyOnStream(b, copy.getLoc(), copy.getTarget(), copy.getSource());
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
      copyOnStream(b, loc, host, load.getMemRef());
      load->setOperand(0, host);
    }
  }

  void runOnOperation() override {
    if (tensorCores != "auto" && tensorCores != "on" && tensorCores != "off") {
      getOperation().emitError()
          << "hla-gpu-map-chunk-loops: tensor-cores must be auto, on or off, "
             "got '"
          << tensorCores << "'";
      return signalPassFailure();
    }
    if (mma != "mma.sync" && mma != "wgmma") {
      getOperation().emitError()
          << "hla-gpu-map-chunk-loops: mma must be mma.sync or wgmma, got '"
          << mma << "'";
      return signalPassFailure();
    }
    if (threads < 32 || threads > 1024 || threads % 32 != 0) {
      getOperation().emitError()
          << "hla-gpu-map-chunk-loops: threads must be a multiple of 32 "
             "between 32 and 1024, got "
          << int64_t(threads);
      return signalPassFailure();
    }
    stageScalarReads();
    copyOnDevice();
    copyGlobalsToDevice();
    // Everything but the chunk loops runs on the host, where the buffers
    // (device memory) must not be touched.
    WalkResult host = getOperation().walk<WalkOrder::PreOrder>(
        [&](Operation *op) {
      if (isa<scf::ForallOp>(op))
        return WalkResult::skip();
      // Allocations, copies and waits of the gpu dialect are device work.
      if (isa<gpu::GPUDialect>(op->getDialect()))
        return WalkResult::advance();
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      bool touchesBuffers =
          isa<linalg::LinalgOp, memref::CopyOp>(op) ||
          (effects && (effects.hasEffect<MemoryEffects::Read>() ||
                       effects.hasEffect<MemoryEffects::Write>()) &&
           llvm::any_of(op->getOperands(), [](Value v) {
             // Host stack buffers (staged scalars) are the host's own.
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
      if (failed(ChunkLoopMapper(forall, threads, maxSharedMemory,
                                 useTensorCores(forall), mma == "wgmma", tma,
                                 tmaPrefetch)
                     .run()))
        return signalPassFailure();

  }
};

struct HLAGPUFinalizeKernelsPass
    : public hla::impl::HLAGPUFinalizeKernelsPassBase<
          HLAGPUFinalizeKernelsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      if (func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) &&
          !func->hasAttr(NVVM::NVVMDialect::getMinctasmAttrName()))
        func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                      IntegerAttr::get(IntegerType::get(ctx, 32), 1));
    });
    getOperation().walk([&](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (!array || array.getNumElements() != 0 ||
          global.getAddrSpace() !=
              static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared))
        return;
      global.setLinkage(LLVM::Linkage::External);
      global.setAlignment(1024);
    });
  }
};

} // namespace
