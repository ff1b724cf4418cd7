// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients=true" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=report" --mlir-print-op-on-diagnostic=false --verify-diagnostics | FileCheck %s

// Tests hla-gpu-lower-register-tiles on the derived backward of linear
// attention with parallel gradients (bf16, c = d = dv = 64, four chunks):
// three kernels on register tiles. The first saves the state entering each
// chunk, the second carries λ from the last chunk to the first and saves
// each chunk's λ (both: one Kᵀ·V or Qᵀ·dO on wgmma per chunk, the carried
// tile in 32 fp32 registers per thread, a [1, 2, 4 · 64, 64] f32 stack
// written from the fragment). The third runs one block per (sequence,
// head, chunk), 2 · 4 of them, with no chunk loop: it copies the chunk's
// token rows into shared memory first (cp.async; wgmma reads four of its
// operands there), reads the chunk's
// saved state and λ (rows of both stacks) and runs its eight contractions
// on wgmma (the masked (dO·Vᵀ)ᵀ computed transposed from dO·Vᵀ's fragment,
// not as a ninth product), writing the chunk's rows of dQ, dK and dV; its
// body, ordered like a chunk loop's, holds 96 fragment registers per
// thread at its peak. Two products take their A from a fragment's
// registers (wgmma with A in registers), the others from copies.

// CHECK-LABEL: func.func @main
// CHECK: %[[STATES:.+]] = memref.alloc() : memref<1x2x256x64xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c128
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: vector.store %{{.*}}, %[[STATES]][{{.*}}] {alignment = 8 : i64} : memref<1x2x256x64xf32>, vector<2xf32>
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: gpu.terminator
// CHECK: %[[LAMBDAS:.+]] = memref.alloc() : memref<1x2x256x64xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c128
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: vector.store %{{.*}}, %[[LAMBDAS]][{{.*}}] {alignment = 8 : i64} : memref<1x2x256x64xf32>, vector<2xf32>
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: gpu.terminator
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c8, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c128
// CHECK-NOT: scf.for {{.*}} -> (f32
// CHECK-COUNT-32: {{nvvm.wgmma.mma_async .*<m = 64, n = 64, k = 16>|wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 .*, {\$64, \$65, \$66, \$67}, \$68}}
// CHECK-NOT: wgmma.mma_async
// CHECK: gpu.terminator
func.func @main(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  // The first two kernels' (one expectation matches both remarks).
  // expected-remark @below {{register tiles: 1 contractions on wgmma, 5 fragments, 8 on-demand tiles, 1 shared-memory operand copies (0 conversions from fragments; 1 operands read from landing buffers), 41600 bytes of shared memory, 1 warpgroup(s), 64 fragment registers per thread at most}}
  // expected-remark @below {{register tiles: 8 contractions on wgmma, 15 fragments, 25 on-demand tiles, 3 shared-memory operand copies (1 conversions from fragments; 4 operands read from landing buffers), 58240 bytes of shared memory, 1 warpgroup(s), 96 fragment registers per thread at most, 2 contractions reading A from registers}}
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
