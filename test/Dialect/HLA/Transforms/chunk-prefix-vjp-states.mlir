// RUN: hla-opt %s --hla-chunk=chunk-size=4 | FileCheck %s

// Tests that hla-chunk lowers a prefix_vjp with states: the forward pass over
// the chunks starts from the (batch entry, head) slice of the initial state,
// the reverse pass from the slice of the final state's cotangent (copied, as
// the loop updates it in place), and the cotangent carried out of the first
// chunk is written as the initial state's gradient.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @vjp_states
// CHECK-SAME: %[[S:[^:]+]]: tensor<1x2x4x3xf32>, %{{[^:]+}}: tensor<1x8x2x3xf32>, %[[H:[^:]+]]: tensor<1x2x4x3xf32>
// CHECK: scf.forall (%[[B:.+]], %[[HD:.+]]) in (1, 2)
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[S]][%[[B]], %[[HD]], 0, 0] [1, 1, 4, 3]
// CHECK: tensor.insert_slice %[[S0]]
// CHECK: %[[H0:.+]] = tensor.extract_slice %[[H]][%[[B]], %[[HD]], 0, 0] [1, 1, 4, 3]
// CHECK: %[[L0:.+]] = linalg.copy ins(%[[H0]] : tensor<4x3xf32>)
// CHECK: %[[BACK:.+]]:4 = scf.for {{.+}} iter_args(%{{.+}} = %[[L0]],
// CHECK: tensor.parallel_insert_slice %[[BACK]]#0 into %{{.+}}[%[[B]], %[[HD]], 0, 0] [1, 1, 4, 3]
func.func @vjp_states(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %s: tensor<1x2x4x3xf32>, %g: tensor<1x8x2x3xf32>, %h: tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32> {
  %dq, %dk, %dv, %ds = hla.prefix_vjp #la (%q, %q, %v) init(%s) cotangent(%g) final_cotangent(%h) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>)
  return %ds : tensor<1x2x4x3xf32>
}
