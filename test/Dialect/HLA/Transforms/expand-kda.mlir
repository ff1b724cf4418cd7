// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand rewrites hla.kda under the affine-map monoid: a token
// is S -> (diag(exp g) - β k kᵀ diag(exp g)) S + β k vᵀ and segments compose;
// only S is carried.

// CHECK: #[[$KDA:kda]] = #hla.monoid<"kda" inputs(q: [dk], k: [dk], v: [dv], g: [dk], beta: []) params(scale = 2.500000e-01) state(M: [dk, dk] eye, S: [dk, dv]) token(M = diag(exp(g)) - beta * k * k.T * diag(exp(g)), S = beta * k * v.T) combine(M = M.b * M.a, S = M.b * S.a + S.b) readout(num = scale * q.T * S)>

// CHECK-LABEL: func.func @kda
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x8x2x4xf32>, %[[K:[^:]+]]: tensor<1x8x2x4xf32>, %[[V:[^:]+]]: tensor<1x8x2x6xf32>, %[[G:[^:]+]]: tensor<1x8x2x4xf32>, %[[B:[^:]+]]: tensor<1x8x2xf32>)
// CHECK: %[[SEG:.+]]:2 = hla.segment #[[$KDA]](%[[K]], %[[V]], %[[G]], %[[B]])
// CHECK-SAME: -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x6xf32>)
// CHECK: %[[S:.+]] = hla.scan #[[$KDA]](%[[SEG]]#0, %[[SEG]]#1) : {{.*}} -> tensor<1x8x2x4x6xf32>
// CHECK: hla.readout #[[$KDA]](%[[Q]]) state(%[[S]])
func.func @kda(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<1x8x2x4xf32>, %beta: tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.25 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
