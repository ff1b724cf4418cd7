// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" --verify-diagnostics | FileCheck %s

// Tests hla-gpu-lower-register-tiles on linear attention with causal
// isolation (the default): each chunk sums q·0 + k·0 + v·0 over its tiles
// (a whole-tile sum: each thread folds its share, warps add by shuffles,
// the four warp sums meet in shared memory after a barrier) and, when the
// sum is NaN, reads the chunk out a second time in a branch: the first
// non-finite row found by one thread (a fold that is not a sum), the
// tiles masked to the rows before it, three more contractions; the branch
// yields the output fragment.

// CHECK-LABEL: func.func @isolated
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK: arith.cmpf uno
// CHECK: scf.if %{{.*}} -> (bf16, bf16
// CHECK: arith.cmpi eq, %{{.*}}, %c0
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.minimumf
// CHECK: nvvm.wgmma.mma_async
// CHECK: scf.yield
// CHECK: } else {
// CHECK: scf.yield
func.func @isolated(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  // expected-remark @below {{register tiles: 7 contractions on wgmma}}
  %o = hla.linear_attention %q, %k, %v : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
