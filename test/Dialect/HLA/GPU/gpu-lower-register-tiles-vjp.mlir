// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=report" --mlir-print-op-on-diagnostic=false --verify-diagnostics | FileCheck %s

// Tests hla-gpu-lower-register-tiles on the derived backward of linear
// attention (bf16, c = d = dv = 64, four chunks): both of hla.prefix_vjp's
// passes run on register tiles, one kernel each, one warpgroup per
// (sequence, head).
// The first pass carries the state S in 32 fp32 registers per thread (one
// Kᵀ·V on wgmma per chunk) and writes the state entering each chunk, a
// whole fragment, into its rows of a [1, 2, 4 · 64, 64] f32 stack.
// The second pass, in reverse, reads each chunk's saved state from those
// rows (a window of rows an earlier kernel wrote) and runs the chunk's
// nine contractions on wgmma; the masked tile that the gradients read
// transposed, (mask ⊙ dO·Vᵀ)ᵀ, is computed transposed from dO·Vᵀ's
// fragment (only a contraction reads it, in either orientation) rather
// than converted through shared memory or its product computed again.
// Its 160 fragment registers at the peak take two warpgroups (each
// contraction a wgmma m64n32k16 per warpgroup; λ in 16 registers).

// CHECK-LABEL: func.func @main
// CHECK: %[[STACK:.+]] = memref.alloc() : memref<1x2x256x64xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c128
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: vector.store %{{.*}}, %[[STACK]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<1x2x256x64xf32>, vector<2xf32>
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: gpu.terminator
// CHECK: %[[SAVED:.+]] = bufferization.to_buffer %{{.*}} read_only : tensor<1x2x256x64xf32> to memref<1x2x256x64xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c256
// CHECK: memref.extract_aligned_pointer_as_index %[[SAVED]] : memref<1x2x256x64xf32> -> index
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-36: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 32, k = 16>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: gpu.terminator
func.func @main(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  // expected-remark @below {{register tiles: 1 contractions on wgmma, 5 fragments, 8 on-demand tiles, 1 shared-memory operand copies (0 conversions from fragments; 1 operands read from landing buffers), 41600 bytes of shared memory, 1 warpgroup(s), 64 fragment registers per thread at most}}
  // expected-remark @below {{register tiles: 9 contractions on wgmma, 20 fragments, 28 on-demand tiles, 6 shared-memory operand copies (4 conversions from fragments; 4 operands read from landing buffers), 116480 bytes of shared memory, 2 warpgroup(s), 80 fragment registers per thread at most}}
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
