// Q2a-loop (accumulator carried through scf.for): 64x64x64 bf16 GEMM tile, one warpgroup (128 threads), via the nvgpu dialect:
//   TMA (nvgpu.tma.async.load) -> mbarrier (expect_tx / try_wait.parity) ->
//   nvgpu.warpgroup.generate.descriptor -> nvgpu.warpgroup.mma (4 x wgmma m64n64k16)
//   -> nvgpu.warpgroup.mma.store to a global f32 memref.
// A: 64(M) x 64(K) bf16 row-major (128 B rows -> swizzle_128b)
// B: 64(K) x 64(N) bf16 row-major, used with {transposeB}
!tmA = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!tmB = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!bar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>
#smem = #gpu.address_space<workgroup>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // Dynamic shared memory as an *external* zero-size global -> `.extern .shared .align 1024 .b8 hla_dyn_smem[]`
    // (gpu.dynamic_shared_memory lowers to an *internal* [0 x i8] global that NVPTX demotes to a 1-byte .shared var).
    memref.global @hla_dyn_smem : memref<0xi8, #smem> {alignment = 1024 : i64}
    gpu.func @gemm_bf16_64x64x64(%pA: !llvm.ptr, %pB: !llvm.ptr, %out: memref<64x64xf32>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      // The tensor maps arrive as generic pointers (upstream: device copy of the CUtensorMap,
      // returned by mgpuTensorMapEncodeTiledMemref); re-type them for the nvgpu ops.
      %descA = builtin.unrealized_conversion_cast %pA : !llvm.ptr to !tmA
      %descB = builtin.unrealized_conversion_cast %pB : !llvm.ptr to !tmB
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8192 = arith.constant 8192 : index
      %tx = arith.constant 16384 : index          // bytes expected: 2 tiles * 64*64*2
      %ticks = arith.constant 10000000 : index
      %false = arith.constant false
      %tid = gpu.thread_id x
      %leader = arith.cmpi eq, %tid, %c0 : index

      %g = memref.get_global @hla_dyn_smem : memref<0xi8, #smem>
      %dyn = memref.reinterpret_cast %g to offset: [0], sizes: [16384], strides: [1] : memref<0xi8, #smem> to memref<16384xi8, #smem>
      %a = memref.view %dyn[%c0][] : memref<16384xi8, #smem> to memref<64x64xbf16, #smem>
      %b = memref.view %dyn[%c8192][] : memref<16384xi8, #smem> to memref<64x64xbf16, #smem>

      %bar = nvgpu.mbarrier.create -> !bar
      nvgpu.mbarrier.init %bar[%c0], %c1 : !bar
      gpu.barrier
      nvgpu.tma.prefetch.descriptor %descA : !tmA
      nvgpu.tma.prefetch.descriptor %descB : !tmB
      scf.if %leader {
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %tx : !bar
        nvgpu.tma.async.load %descA[%c0, %c0], %bar[%c0] to %a : !tmA, !bar -> memref<64x64xbf16, #smem>
        nvgpu.tma.async.load %descB[%c0, %c0], %bar[%c0] to %b : !tmB, !bar -> memref<64x64xbf16, #smem>
      }
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %false, %ticks : !bar

      %dA = nvgpu.warpgroup.generate.descriptor %a, %descA : memref<64x64xbf16, #smem>, !tmA -> !nvgpu.warpgroup.descriptor<tensor = memref<64x64xbf16, #smem>>
      %dB = nvgpu.warpgroup.generate.descriptor %b, %descB : memref<64x64xbf16, #smem>, !tmB -> !nvgpu.warpgroup.descriptor<tensor = memref<64x64xbf16, #smem>>
      %acc0 = nvgpu.warpgroup.mma.init.accumulator -> !acc
      // K loop carrying the accumulator through scf.for iter_args (same smem tile each time: compile-only check)
      %c8 = arith.constant 8 : index
      %acc1 = scf.for %kk = %c0 to %c8 step %c1 iter_args(%acc = %acc0) -> (!acc) {
        %accN = nvgpu.warpgroup.mma %dA, %dB, %acc {transposeB}
            : <tensor = memref<64x64xbf16, #smem>>, <tensor = memref<64x64xbf16, #smem>>, !acc -> !acc
        scf.yield %accN : !acc
      }
      nvvm.wgmma.wait.group.sync.aligned 0
      nvgpu.warpgroup.mma.store %acc1, %out : !acc to memref<64x64xf32>
      gpu.return
    }
  }
}
