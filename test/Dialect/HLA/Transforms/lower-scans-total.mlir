// RUN: hla-opt %s --hla-lower-scans | FileCheck %s

// Tests that hla-lower-scans lowers an hla.total whose segments are not a
// chunked chain (here: function arguments) to a sequential fold of every
// component along the axis, from the identity, one hla.combine per element.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @total
// CHECK-SAME: (%[[P:.+]]: tensor<1x8x2x4x4xf32>, %[[R:.+]]: tensor<1x8x2xf32>)
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK: %[[L:.+]]:2 = scf.for %[[I:.+]] = %{{.+}} to %[[C8]] step %{{.+}} iter_args(%[[A:.+]] = %{{.+}}, %[[B:.+]] = %{{.+}}) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
// CHECK: %[[SP:.+]] = tensor.extract_slice %[[P]][0, %[[I]], 0, 0, 0] [1, 1, 2, 4, 4]
// CHECK: %[[SR:.+]] = tensor.extract_slice %[[R]][0, %[[I]], 0] [1, 1, 2]
// CHECK: %[[C:.+]]:2 = hla.combine #{{.+}}(%[[A]], %[[B]]), (%[[SP]], %[[SR]])
// CHECK: scf.yield %[[C]]#0, %[[C]]#1
// CHECK: return %[[L]]#0, %[[L]]#1
func.func @total(%p: tensor<1x8x2x4x4xf32>, %r: tensor<1x8x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>) {
  %P, %R = hla.total #la(%p, %r) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
  return %P, %R : tensor<1x2x4x4xf32>, tensor<1x2xf32>
}
