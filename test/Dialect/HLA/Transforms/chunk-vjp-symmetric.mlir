// RUN: hla-opt %s --split-input-file --hla-derive-vjp --hla-expand --hla-chunk="chunk-size=8 form=fused" --convert-hla-to-linalg --hla-share-tile-products --hla-report-chunk-work -o /dev/null 2>&1 | FileCheck %s

// Tests that hla-chunk reads hla2's S = Σ k kᵀ (symmetric: its token rule
// k * k.T and its combine rule, a decayed sum) as stored where the
// backward's terms read it transposed, so that Q·S₀ᵀ and Q·S₀ are one
// product in the reverse pass: one contraction fewer per chunk than with
// an initial state, which need not be symmetric and keeps both. (The
// backward's two passes: the carried-in states, the same in both, and
// the reverse pass.)

// CHECK: remark: hla-report-chunk-work: 6 contractions
// CHECK: remark: hla-report-chunk-work: 37 contractions
func.func @main(%q: tensor<1x16x2x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32>
  return %o : tensor<1x16x2x8xf32>
}

// -----

// CHECK: remark: hla-report-chunk-work: 6 contractions
// CHECK: remark: hla-report-chunk-work: 38 contractions
func.func @main(%q: tensor<1x16x2x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>, %s0: tensor<1x2x8x8xf32>, %c0: tensor<1x2x8x8xf32>, %g0: tensor<1x2x8x8xf32>) -> tensor<1x16x2x8xf32> {
  %o = hla.hla2 %q, %k, %v initial_state(%s0, %c0, %g0) : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x16x2x8xf32>
  return %o : tensor<1x16x2x8xf32>
}
