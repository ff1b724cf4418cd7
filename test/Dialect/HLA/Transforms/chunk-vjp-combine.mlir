// RUN: hla-opt %s --test-hla-chunk-plan="vjp=true" -o /dev/null 2>&1 | FileCheck %s

// Tests the transposed combine rule of masked HLA2: G = G.a + G.b + S.b·C.a
// sends λ_G back to the carried C (Sᵀ_Σ λ_G, through the chunk's summary S)
// and to the summaries S (λ_G C₀ᵀ) and G; the other components pass λ on.
// The index terms are checked numerically in chunk-vjp-check.mlir.
// CHECK-LABEL: remark: combine dS0: dout_S
// CHECK:       remark: dsum_S: dout_S + dout_G * C.a.T
// CHECK:       remark: combine dC0: dout_C + S.b.T * dout_G
// CHECK:       remark: dsum_C: dout_C
// CHECK:       remark: combine dG0: dout_G
// CHECK:       remark: dsum_G: dout_G
// CHECK-NOT:   error
func.func @hla2(%q: tensor<1x8x2x4xf32>) {
  %0 = hla.hla2 %q, %q, %q {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}
