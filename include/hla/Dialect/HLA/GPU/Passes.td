//===- Passes.td - hla's GPU passes ------------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The passes that put hla's loops and model graphs on NVIDIA GPUs; the
// CUDA pipeline (Pipelines.h) runs them after bufferization.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_GPU_PASSES_TD
#define HLA_DIALECT_HLA_GPU_PASSES_TD

include "hla/Dialect/HLA/PassOptions.td"
include "mlir/Pass/PassBase.td"

def HLAGPUDistributeGraphOpsPass : Pass<"hla-gpu-distribute-graph-ops",
                                        "::mlir::func::FuncOp"> {
  let summary = "Turn a model graph's tensor ops into loops of GPU blocks";
  let description = [{
    Runs on tensors before bufferization, after the attention ops became
    their chunk loops: every linalg op of the function body outside those
    loops (projections, norms, activations, fills, gathers) is tiled along
    its first parallel loop into an `scf.forall` of row blocks of at most
    `rows` rows (the largest such divisor of the extent, so that every
    block has static sizes); an op without parallel loops (a full
    reduction) becomes a one-iteration `scf.forall`. A
    `tensor.insert_slice` of the body is rewritten to copy its source with
    `linalg.copy` into the slice of its destination, which is then tiled
    like the rest. `hla-gpu-map-chunk-loops` turns each loop into a kernel,
    so no op of the graph touches device memory from the host.

    Before:

    ```mlir
    %y = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x32xf32>)
        outs(%z : tensor<64x32xf32>) -> tensor<64x32xf32>
    ```

    After (`rows=16`): an `scf.forall (%i) in (4)` whose body multiplies
    rows [16 i, 16 i + 16) of `%x` by `%w` into the same rows of `%z`.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "16",
           "Rows of the first parallel loop per block (at most)">,
    Option<"cublasMatmuls", "cublas-matmuls", "bool", "false",
           "Leave linalg.matmul and linalg.batch_matmul for "
           "hla-gpu-matmuls-to-cublas">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HLAGPUMapChunkLoopsPass : Pass<"hla-gpu-map-chunk-loops",
                                   "::mlir::func::FuncOp"> {
  let summary = "Run bufferized (sequence, head) chunk loops as GPU thread blocks";
  let description = [{
    Runs after bufferization on the fused chunked form (`hla-chunk
    form=fused`): every top-level `scf.forall` of a function becomes a
    `gpu.launch` with one thread block of `block-threads` threads per iteration
    (all on grid x, so B·H is not limited to 65,535), and its body becomes
    the block's program:

    * every `memref.alloc` of the body (chunk tiles, the carried state) is
      placed in dynamic shared memory; buffers whose lifetimes do not overlap
      share bytes (first fit over the body's program order); tiles whose
      rows are a multiple of 128 bytes get 16 bytes of padding per row
      (against bank conflicts on column reads) when that still fits;
    * every linalg op and `memref.copy` is run by the whole thread block:
      its parallel iterations are spread over the threads (consecutive
      threads on the innermost parallel dimension), its reductions run
      inside each thread; a `gpu.barrier` separates it from the code before
      and after it;
    * with tensor cores, a contraction `C (+)= A·B` of 2-D buffers (sizes
      multiples of 16 x 8 x 16) runs on `mma.sync.m16n8k16` instead: each
      warp takes 16-row by up-to-32-column blocks of C, holds them in
      accumulator fragments over the reduction, and reads A and B from
      shared memory as bf16 pairs; a zero fill of C just before starts the
      accumulators at zero instead, and an elementwise op just after that
      is C's only later reader (a mask, a decay) is applied to the
      accumulators before they are stored, into that op's output;
    * with `mma=wgmma` (sm_90a), a contraction whose C has a multiple of 64
      rows runs on warpgroup MMA (`wgmma.mma_async` m64nNk16) instead: the
      block's threads first copy A and B as bf16 into staging buffers laid
      out as the instruction's canonical K-major core matrices (8 rows of
      16 bytes), then each warpgroup (128 threads) takes 64-row blocks of C,
      keeps them in accumulator registers over the reduction and issues one
      wgmma per 16 of K with shared-memory descriptors of the staged
      operands; zero fills and epilogues are absorbed as with mma.sync;
    * a scalar `memref.store` is done by thread 0; the remaining scalar code
      (chunk bounds, loop control) runs in every thread.

    Buffers allocated in the function body itself (what one loop leaves for
    the next, such as the segmented form's segment summaries) become
    `gpu.alloc`/`gpu.dealloc` on the launches' stream.

    `tensor-cores=auto` uses them when the loop reads 16-bit float data (the
    op's precision is then 16-bit, and bf16 operands of its chunk math stay
    within it); float32 ops keep float32 arithmetic.

    The body may read only function arguments, device buffers and constants
    from outside. Buffers that do not fit in `max-shared-memory` bytes even
    packed (largest first) go to the block's slice of a device-memory
    scratch buffer, allocated and freed on the stream around the launch.
  }];
  let options = [
    Option<"blockThreads", "block-threads", "int64_t", "256",
           "Threads per block">,
    HLA_MaxSharedMemoryOption,
    HLA_ModeOption<"tensorCores", "tensor-cores", "AutoSwitch", "Auto",
                   "Contractions on tensor cores: auto, on or off">,
    HLA_ModeOption<"mma", "mma", "MmaInstruction", "MmaSync",
                   "Tensor-core instruction: mma.sync (sm_80 and later) or "
                   "wgmma (sm_90a); auto is the pipeline's to resolve">,
    Option<"tma", "tma", "bool", "false",
           "Load token tiles with TMA (cp.async.bulk.tensor, sm_90)">,
    Option<"tmaPrefetch", "tma-prefetch", "bool", "true",
           "With TMA: double-buffer the tiles and load the next chunk's "
           "while the current one computes">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def HLAGPULowerRegisterTilesPass : Pass<"hla-gpu-lower-register-tiles",
                                        "::mlir::func::FuncOp"> {
  let summary = "Run tensor chunk loops as GPU thread blocks with tiles in registers";
  let description = [{
    Runs before bufferization on the fused chunked form (`hla-chunk
    form=fused`, lowered to linalg on tensors): a top-level `scf.forall`
    whose chunk math it can place becomes a `gpu.launch` with one block of
    one or two warpgroups per iteration, and the chunk body's tiles stay
    values.
    Each 2-D tile is given a *placement*:

    * `frag`: a fragment in registers, 64 to 256 rows by N columns, each
      64 rows a wgmma accumulator over the warpgroup's registers (thread t
      holds rows 16(t/32) + (t%32)/4 and 8 more of each 64, columns
      8j + 2(t%4) and the next): every contraction result, every
      elementwise op reading one (masks, decays, scales and casts run on
      each thread's elements), the carried state (loop-carried
      registers; d = 128 rows are two blocks), and a tile of on-demand
      operands that a contraction takes and a fold of rows reads too
      (computed once, not by the copy and by each fold);
    * `expr`: a tile whose elements any thread can compute on demand (token
      tiles read from global memory, fills, elementwise ops of those and of
      indices), never stored as a whole;
    * `smem`: a bf16 copy in wgmma's core-matrix layout without swizzling
      (8 x 8 blocks of 16-byte rows; the tile's rows down each group of 8
      columns, the groups 16 bytes apart more than their rows need, against
      bank conflicts), one per contraction operand: read K-major where K is
      the tile's columns, MN-major (wgmma's transpose bit) where K is its
      rows. Made from an `expr` tile by the whole block (16-byte stores),
      from a `frag` tile by `stmatrix` (each warp's 8 x 8 blocks are core
      matrices) — a *conversion*. Token rows are copied a chunk ahead into
      landing buffers of this layout, so a token tile (or its exact f32
      widening) is read by wgmma where it landed, with no copy.

    A pass with no loop (parallel over chunks) copies its token rows into
    shared memory before its work, and the f32 tiles of earlier kernels'
    stacks it reads four times an element or more (a reduction each thread
    computes reads its operands once per step of the loops their maps
    leave out), the most read first, while the block's shared memory stays
    within half an SM's: read from global memory where needed, over and
    over, they miss in L1.

    An elementwise read of a contraction's result in the other orientation
    (hla2's masked (QKᵀ)ᵀ) is first rewritten into a read of the same
    product computed with its output transposed (K·Qᵀ, from operands already
    staged): a fragment's transpose would be a round trip through shared
    memory. Once placed, each chunk loop's body (side-effect free tensor
    ops) is reordered greedily so that few fragments are alive at once, and
    where one warpgroup would hold more than 128 fragment registers per
    thread (`warpgroups=0`, auto), two share the block: each holds 64 rows
    by half the columns of every fragment and issues its own wgmma of that
    width. Copies never alive together share bytes where the block would
    not fit otherwise, and where sharing lets a second block of one
    warpgroup on each SM (within half an SM's shared memory).

    Contractions `C (+)= A·B` whose C has 64 to 256 rows (a multiple of 64)
    and 8 to 256 columns (a multiple of 8), K a multiple of 16, run as
    `wgmma.mma_async` m64nNk16, one chain per 64 rows of C, with both
    operands' descriptors; their results are waited for at their
    first reader, so independent contractions overlap. Barriers are emitted
    only where a shared-memory copy is rewritten after wgmma read it or read
    by wgmma after threads wrote it (with `fence.proxy.async`). Output rows
    are stored from the fragments (rows before the chunk's end).

    Loops it cannot place (a reduction other than a contraction, state or
    tiles of other than 64 to 256 rows, non-bf16 inputs, a conditional region,
    final states) are left for `hla-gpu-map-chunk-loops`; with
    `generator=tiles` each is an error instead. `report` prints one remark
    per loop: the placements, the contractions, the conversions, the
    warpgroups and the most fragment registers a thread holds at once.
  }];
  let options = [
    HLA_ModeOption<"generator", "generator", "ChunkLoopGenerator", "Auto",
                   "auto (loops it can place; the others stay) or tiles "
                   "(every chunk loop, else an error); phases is the "
                   "pipeline's (this pass does not run)">,
    Option<"report", "report", "bool", "false",
           "One remark per chunk loop: placements, contractions, conversions">,
    HLA_MaxSharedMemoryOption,
    Option<"warpgroups", "warpgroups", "int64_t", "0",
           "Warpgroups per block, each holding its share of every "
           "fragment's columns: 1, 2, or 0 (auto: 2 where one warpgroup "
           "would hold more than 128 fragment registers per thread)">,
    Option<"landF32Stacks", "land-f32-stacks", "bool", "false",
           "Copy a chunk loop's whole f32 tiles of an earlier kernel's "
           "stack (hla-hoist-chunk-work's, such as KDA's U) a chunk ahead "
           "into shared memory, not read from global memory where needed">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def HLAGPULowerAsyncCopiesPass
    : Pass<"hla-gpu-lower-async-copies", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower nvgpu async copies to NVVM with the kernels' index width";
  let description = [{
    Lowers `nvgpu.device_async_copy` (what hla-gpu-lower-register-tiles
    emits to copy token rows a chunk ahead) to `nvvm.cp.async.shared.global`,
    with `index-bitwidth`-bit indices: upstream's convert-nvgpu-to-nvvm
    always uses the machine word, and the buffer descriptors it expects then
    differ from convert-gpu-to-nvvm's at 32 bits. Runs before
    convert-gpu-to-nvvm; the memref casts it leaves are reconciled after.
  }];
  let options = [
    Option<"indexBitwidth", "index-bitwidth", "unsigned", "0",
           "Bitwidth of the index type (0: the machine word)">
  ];
  let dependentDialects = [
    "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect"
  ];
}

def HLAGPUMatmulsToCublasPass : Pass<"hla-gpu-matmuls-to-cublas",
                                      "::mlir::func::FuncOp"> {
  let summary = "Run a model graph's matrix products with cuBLAS";
  let description = [{
    Runs on buffers (device memory), before `hla-gpu-map-chunk-loops`:
    every `linalg.matmul` and `linalg.batch_matmul` of the function body
    (a projection, an MLP layer of the model graph) becomes a call of the
    runtime's `hla_cuda_gemm`, which runs `C += A·B` (row-major in hla's
    terms, batched with strides) with `cublasGemmStridedBatchedEx`: f32,
    f16 or bf16 operands and result, f32 accumulation (no TF32), on the
    launches' stream. The operands' strides are passed at run time; the
    runtime picks the transposition cuBLAS needs for each operand (unit
    stride along either dimension) and stops with a clear error for other
    layouts. cuBLAS is opened with dlopen on the first product, so an
    artefact needs it only when its graph has matrix products.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def HLAGPUQueueLaunchesPass
    : Pass<"hla-gpu-queue-launches", "::mlir::func::FuncOp"> {
  let summary = "Queue kernel launches on the stream without waiting for them";
  let description = [{
    Every synchronous `gpu.launch_func` of the host code becomes an
    asynchronous one on hla's stream (`gpu.wait async`, which the runtime
    answers with the one stream all of a call's work goes on: the caller's,
    e.g. torch's current stream, or hla's own), and nothing waits for it.
    upstream's lowering of a synchronous launch waits for the kernel to
    finish before the host goes on; on one stream that wait orders nothing
    (the next kernel, free or copy is queued behind it anyway) and keeps
    the host from queueing the next kernel while this one runs. The host
    still waits where it reads device memory (a copy to the host waits for
    its data) and an executable's `main` waits before it copies its results
    back. A call on a stream the caller handed the runtime
    (`hla_cuda_set_stream`, as hla's Python package does with torch's
    current stream) returns once its work is queued, as a CUDA library call
    does; a call on hla's own stream waits for its work before it returns
    (`hla_runtime_call_done`), so that its results are in place and its
    kernels' faults are its failure.

    ```mlir
    gpu.launch_func @main_kernel::@main_kernel blocks in (...) threads in (...)
    // becomes
    %t = gpu.wait async
    %0 = gpu.launch_func async [%t] @main_kernel::@main_kernel blocks in ...
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def HLAGPUFinalizeKernelsPass
    : Pass<"hla-gpu-finalize-kernels", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Fix up NVVM kernels: extern dynamic shared memory, occupancy";
  let description = [{
    Runs after `convert-gpu-to-nvvm` on each kernel module:

    * MLIR 22 lowers `gpu.dynamic_shared_memory` to an *internal*
      zero-sized array in address space 3, which LLVM 22's NVPTX back end
      emits as a one-byte `.shared` variable rather than as
      `.extern .shared .b8 x[]` — every buffer carved out of it would
      overlap whatever the assembler places next. Such globals get external
      linkage and 1024-byte alignment (what 128-byte swizzled tiles need),
      which makes them the dynamic shared memory window.
    * Kernels get `nvvm.minctasm = 1` (`.minnctapersm 1`): a chunk loop's
      thread block holds most of an SM's shared memory, so only one is
      resident, and without the hint ptxas assumes four per SM for a
      256-thread block and caps registers at 64, spilling.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // HLA_DIALECT_HLA_GPU_PASSES_TD
