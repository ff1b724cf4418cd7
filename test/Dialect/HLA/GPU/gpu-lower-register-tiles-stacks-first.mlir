// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums "--hla-fission-chunk-passes=max-live-bytes=98304 bf16-operands" --canonicalize "--hla-gpu-lower-register-tiles=report" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums "--hla-fission-chunk-passes=max-live-bytes=98304 bf16-operands" --canonicalize --hla-gpu-lower-register-tiles | FileCheck %s --check-prefix=LOWER

// Tests that a pass with no loop copies the stacked f32 tiles it reads most
// into shared memory before its work, within half an SM's shared memory:
// the last stage of KDA's cut gradients' pass reads Γ (stacked by an
// earlier stage) in most of its terms and sixteen times an element in its
// pair sums, which each thread computes, and a band of dA sixteen times an
// element; read from global memory where needed, they miss in L1. The two
// land with one cp.async wait and a barrier, after which the pair sums'
// loop reads Γ from shared memory (row-major, 68 columns apart). Stages
// reading no stacked tile four times or more copy none. (The fourth stage's
// copies share bytes to fit two blocks an SM, 83,968 bytes, which leaves
// room for its most-read stacked tile.)

// CHECK: remark: register tiles:
// CHECK-NOT: copied first
// CHECK: remark: register tiles:
// CHECK-NOT: copied first
// CHECK: remark: register tiles:
// CHECK-NOT: copied first
// CHECK: remark: register tiles: {{.*}} 83968 bytes of shared memory, {{.*}}, 1 stacked tiles copied first
// CHECK: remark: register tiles: {{.*}}, 1 stacked tiles copied first
// CHECK: remark: register tiles: {{.*}}, 1 stacked tiles copied first
// CHECK: remark: register tiles: {{.*}}, 1 stacked tiles copied first
// CHECK: remark: register tiles: {{.*}}, 1 stacked tiles copied first
// CHECK: remark: register tiles: {{.*}}, 2 stacked tiles copied first
// CHECK: remark: register tiles:
// CHECK-NOT: copied first
// CHECK: remark: register tiles: {{.*}}, 1 stacked tiles copied first
// CHECK: remark: register tiles: {{.*}}, 1 stacked tiles copied first
// CHECK: remark: register tiles: {{.*}}, 2 stacked tiles copied first
// CHECK: remark: register tiles: 1 contractions on wgmma, {{.*}} 65152 bytes of shared memory, {{.*}}, 1 reductions by thread, {{.*}}, 2 stacked tiles copied first
// CHECK-NOT: remark: register tiles:

// LOWER-COUNT-13: gpu.launch blocks
// LOWER: gpu.launch blocks
// LOWER: nvgpu.device_async_copy %{{.*}} : memref<1x2x192x64xf32> to memref<4352xf32, #gpu.address_space<workgroup>>
// LOWER: nvgpu.device_async_copy %{{.*}} : memref<1x2x192x16xf32> to memref<1280xf32, #gpu.address_space<workgroup>>
// LOWER: nvvm.cp.async.wait.group 0
// LOWER-NEXT: gpu.barrier
// LOWER: scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %c1{{.*}} iter_args
// LOWER-NOT: scf.yield
// LOWER: memref.load %{{.*}} : memref<4352xf32, #gpu.address_space<workgroup>>
// LOWER-NOT: gpu.launch blocks
func.func @main(%q: tensor<1x130x2x64xbf16>, %k: tensor<1x130x2x64xbf16>, %v: tensor<1x130x2x64xbf16>, %g: tensor<1x130x2x64xbf16>, %beta: tensor<1x130x2xbf16>) -> tensor<1x130x2x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.125 : f64} : (tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2xbf16>) -> tensor<1x130x2x64xbf16>
  return %o : tensor<1x130x2x64xbf16>
}
