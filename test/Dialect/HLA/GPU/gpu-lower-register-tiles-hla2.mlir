// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize | FileCheck %s --check-prefix=PLAN

// Tests hla-gpu-lower-register-tiles on hla2 (bf16, c = d = dv = 64). The
// planned chunk body has 13 contractions and reads QKᵀ transposed once
// (masked into the strictly lower K Qᵀ), and only a contraction reads that
// masked tile: the pass computes the mask's product transposed instead,
// (QKᵀ ⊙ Mᵀ), from QKᵀ's fragment, and the contraction reads it
// transposed, so no 14th product is needed and no fragment is transposed.
// It then orders the body so that at most 256 fragment registers
// are alive per warpgroup thread (three carried 64 x 64 states and five
// working tiles) and, that being over 128, shares every fragment between
// two warpgroups: 256 threads, each contraction a wgmma m64n32k16 per
// warpgroup, 128 fragment registers per thread.

// PLAN: #{{.*}} = affine_map<(d0, d1) -> (d1, d0)>
// PLAN-LABEL: func.func @hla2
// PLAN-COUNT-13: iterator_types = ["parallel", {{"reduction", "parallel"|"parallel", "reduction"}}]
// PLAN-NOT: iterator_types = ["parallel", {{"reduction", "parallel"|"parallel", "reduction"}}]

// CHECK: remark: register tiles: 13 contractions on wgmma, {{.*}}, 2 warpgroup(s), 128 fragment registers per thread at most
// CHECK-LABEL: func.func @hla2
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c256
// CHECK-NOT: n = 64
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
// CHECK-NOT: n = 64
func.func @hla2(%q: tensor<2x256x2x64xbf16>, %k: tensor<2x256x2x64xbf16>, %v: tensor<2x256x2x64xbf16>) -> tensor<2x256x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64} : (tensor<2x256x2x64xbf16>, tensor<2x256x2x64xbf16>, tensor<2x256x2x64xbf16>) -> tensor<2x256x2x64xbf16>
  return %o : tensor<2x256x2x64xbf16>
}
