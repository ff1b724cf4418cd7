// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report land-f32-stacks" --mlir-print-op-on-diagnostic=false --verify-diagnostics | FileCheck %s

// Tests hla-gpu-lower-register-tiles on KDA (bf16, c = d = dv = 64, four
// chunks) after hla-hoist-chunk-work: two kernels on register tiles.
//   * The first runs one block per (sequence, head, chunk), 1 · 2 · 4 of
//     them, with no chunk loop: it copies the chunk's token rows (q, k, v,
//     g) into shared memory first (cp.async, one wait), then runs the work
//     the state does not reach (21 products: Γ, the pairs, the triangular
//     solve, W, U) and writes the stacks: W, e^Γ⊙Q, A_qk and K̃ in bf16
//     (only tensor cores read them), U and Γ's last row in f32. Its pair
//     bands, reductions each thread computes, take the hardware's exp2.
//   * The second carries the state over the chunks with 4 products (W·S,
//     (e^Γ⊙Q)·S, A_qk·(U − W·S), K̃ᵀ·(U − W·S)); the four bf16 stack tiles
//     it multiplies are copied a chunk ahead into landing buffers and read
//     there by wgmma; with land-f32-stacks (as the CUDA pipeline sets it
//     with hoisting) U, f32, lands a chunk ahead too, row-major (68
//     columns apart), for U − W·S.

// CHECK-LABEL: func.func @kda
// CHECK-DAG: %[[W:.+]] = memref.alloc() : memref<1x2x256x64xbf16>
// CHECK-DAG: memref.alloc() : memref<1x2x256x64xf32>
// CHECK-DAG: memref.alloc() : memref<1x2x4x64xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c8{{.*}}, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c256
// CHECK-COUNT-4: nvgpu.device_async_copy %{{.*}} : memref<1x256x2x64xbf16> to memref<4160xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64{{.*}} step %c8{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: math.exp %{{.*}} fastmath<contract,afn> : f32
// CHECK: nvvm.wgmma.mma_async
// CHECK: vector.store %{{.*}}, %[[W]]
// CHECK: gpu.terminator
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c128
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<1x2x256x64xbf16> to memref<8320xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<1x2x256x64xf32> to memref<8704xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<1x2x256x64xbf16> to memref<8320xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<1x2x256x64xf32> to memref<8704xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK: gpu.terminator
func.func @kda(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>, %g: tensor<1x256x2x64xbf16>, %beta: tensor<1x256x2xbf16>) -> tensor<1x256x2x64xbf16> {
  // expected-remark @below {{register tiles: 21 contractions on wgmma, 54 fragments, 50 on-demand tiles, 31 shared-memory operand copies (28 conversions from fragments; 1 operands read from landing buffers), 117248 bytes of shared memory, 2 warpgroup(s), 132 fragment registers per thread at most, 3 exact copies of fragments, 2 reductions by thread}}
  // expected-remark @below {{register tiles: 4 contractions on wgmma, 10 fragments, 13 on-demand tiles, 2 shared-memory operand copies (2 conversions from fragments; 4 operands read from landing buffers), 118016 bytes of shared memory, 1 warpgroup(s), 96 fragment registers per thread at most}}
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
