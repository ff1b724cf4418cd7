// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 form=fused" --convert-hla-to-linalg --hla-report-chunk-work -o /dev/null 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 form=phased" --convert-hla-to-linalg --hla-report-chunk-work -o /dev/null 2>&1 | FileCheck %s --check-prefix=PHASED

// Tests hla-report-chunk-work on linear attention, c = 8, d = 4, dv = 2.
// Fused: one chunk body with four contractions, Q·Kᵀ (8·8·4), Q·S (8·2·4),
// (QKᵀ ⊙ L)·V (8·2·8) and the summary Kᵀ·V (4·2·8), 2·(256 + 64 + 128 + 64)
// = 1024 FLOP; causal isolation's repair runs the three readout products
// (896 FLOP) again on the shortened chunk. Phased: the summaries' forall and the readouts' forall
// are reported apart (the scan over chunks has no chunk body).

// CHECK: remark: hla-report-chunk-work: 4 contractions (1024 FLOP), 0 matrix-vector products,
// CHECK-SAME: per chunk; in conditional regions: 3 contractions (896 FLOP)
// CHECK-NOT: remark

// PHASED: remark: hla-report-chunk-work: 1 contractions (128 FLOP), 0 matrix-vector products
// PHASED: remark: hla-report-chunk-work: 3 contractions (896 FLOP)
// PHASED-SAME: in conditional regions: 3 contractions
func.func @linear(%q: tensor<1x20x1x4xf32>, %k: tensor<1x20x1x4xf32>, %v: tensor<1x20x1x2xf32>) -> tensor<1x20x1x2xf32> {
  %o = hla.linear_attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>, tensor<1x20x1x2xf32>) -> tensor<1x20x1x2xf32>
  return %o : tensor<1x20x1x2xf32>
}
