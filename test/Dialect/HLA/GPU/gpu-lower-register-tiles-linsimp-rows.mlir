// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false anchor-rows=64 stable-features=true" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report" 2>&1 | FileCheck %s

// Tests register tiles on LinSimp's rows after hla-hoist-chunk-work moved
// them into a pass parallel over (head, chunk) (d = dv = m = 64, W = 16,
// one anchor offset per pass): the loop keeping M and a is left to the
// phases (a's stack is a vector); the rows' pass is placed, its anchor
// window a loop carrying the numerator fragment (32 values a thread) and
// two row vectors (the denominator and the running maximum of each row,
// two values a thread: rows r and r + 8 of the one 64-row block); the
// rows' sums and maxima combine the four threads of a row by shuffles.

// CHECK: remark: left to hla-gpu-map-chunk-loops: tensor.insert_slice: a strided or non-2-D slice
// CHECK: remark: register tiles: 5 contractions on wgmma, {{.*}} 1 warpgroup(s), {{.*}} 5 reductions of rows
// CHECK-LABEL: func.func @rows
// CHECK: scf.forall
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c128,
// CHECK: scf.for %{{.+}} = %{{.+}} to %c16{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: nvvm.wgmma.mma_async
// CHECK: gpu.shuffle  xor
// CHECK: gpu.shuffle  xor
// CHECK: arith.maximumf
func.func @rows(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %r: tensor<1x100x2x64xbf16>, %u: tensor<1x100x2x64xbf16>, %om: tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
