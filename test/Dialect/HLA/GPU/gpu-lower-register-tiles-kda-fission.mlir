// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums "--hla-fission-chunk-passes=max-live-bytes=98304 bf16-operands report" --canonicalize "--hla-gpu-lower-register-tiles=report" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums "--hla-fission-chunk-passes=max-live-bytes=98304 bf16-operands" --canonicalize --hla-gpu-lower-register-tiles | FileCheck %s --check-prefix=LOWER

// Tests KDA's derived backward (bf16, c = d = dv = 64, parallel gradients)
// with its gradients' pass cut by hla-fission-chunk-passes: one program
// needing 776 fragment registers per thread at its peak
// (gpu-lower-register-tiles-kda-vjp.mlir) becomes twelve passes of at
// most 96 KiB of live tiles each, the tiles between them stacked (in bf16
// where later passes only multiply them). Every pass places on register
// tiles (none is left to the phases), the stages reading their stacks back
// on demand: rows of a stacked Γ, blocked tiles as the rows they view,
// row and column vectors stored whole.
// CHECK: remark: hla-fission-chunk-passes: 12 stages: {{.*}}; 58 tiles stacked (13 in bf16), 601088 bytes a chunk
// CHECK-NOT: left to hla-gpu-map-chunk-loops
// CHECK-COUNT-14: remark: register tiles:
// CHECK-NOT: left to hla-gpu-map-chunk-loops

// LOWER-COUNT-14: gpu.launch blocks
// LOWER-NOT: gpu.launch blocks
// LOWER-NOT: scf.forall (
func.func @main(%q: tensor<1x130x2x64xbf16>, %k: tensor<1x130x2x64xbf16>, %v: tensor<1x130x2x64xbf16>, %g: tensor<1x130x2x64xbf16>, %beta: tensor<1x130x2xbf16>) -> tensor<1x130x2x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.125 : f64} : (tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2xbf16>) -> tensor<1x130x2x64xbf16>
  return %o : tensor<1x130x2x64xbf16>
}
