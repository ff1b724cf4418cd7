// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false anchor-rows=64 stable-features=true" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false anchor-rows=64 stable-features=true" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize --hla-gpu-lower-register-tiles | FileCheck %s

// Tests that a tile made from tiles in memory, read only by elementwise ops
// inside a loop, is computed once before the loop into a fragment:
// LinSimp's scaled queries √τ q (d = 64: √τ = 8^-½), which every anchor
// offset of its rows' pass multiplies by the anchors' rows. On demand they
// would be loaded, converted and scaled again at each of the 16 offsets.

// The rows' pass: 16 fragments (15 without the queries'), the same peak.
// REPORT: remark: register tiles: {{.*}}
// REPORT: remark: register tiles: 5 contractions on wgmma, 16 fragments, 31 on-demand tiles, {{.*}} 96 fragment registers per thread at most

// In the rows' kernel: the keys' projections and the queries (32 elements
// a thread each) are scaled by √τ before the window's loop, nothing in it.
// CHECK-LABEL: func.func @rows
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: %[[ROOT:.+]] = arith.constant 0.353553385 : f32
// CHECK-COUNT-64: arith.mulf %{{.+}}, %[[ROOT]] : f32
// CHECK: scf.for %{{.+}} = %{{.+}} to %c16
// CHECK-NOT: arith.mulf %{{.+}}, %[[ROOT]] : f32
// CHECK: gpu.terminator
func.func @rows(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %r: tensor<1x100x2x64xbf16>, %u: tensor<1x100x2x64xbf16>, %om: tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
