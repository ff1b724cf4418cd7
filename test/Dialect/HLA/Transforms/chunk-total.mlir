// RUN: hla-opt %s --hla-chunk=chunk-size=16 | FileCheck %s

// Tests that hla-chunk lowers `segment -> total` along T to one loop per
// (batch entry, head) over the sequence's 3 chunks (40 tokens), folding
// every component's chunk summary into a carry that starts at the identity
// (rho's: 1), each writing its [B, H, ...] row.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @total
// CHECK-NOT: hla.segment
// CHECK: %[[L:.+]]:2 = scf.forall (%[[B:.+]], %[[H:.+]]) in (1, 2)
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[C3]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x4xf32>, tensor<f32>)
// CHECK: hla.combine #{{.+}}
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[H]], 0, 0] [1, 1, 4, 4]
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[H]]] [1, 1]
// CHECK: return %[[L]]#0, %[[L]]#1
func.func @total(%k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>) {
  %p, %r = hla.segment #la(%k, %v) : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>) -> (tensor<1x40x2x4x4xf32>, tensor<1x40x2xf32>)
  %P, %R = hla.total #la(%p, %r) : (tensor<1x40x2x4x4xf32>, tensor<1x40x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
  return %P, %R : tensor<1x2x4x4xf32>, tensor<1x2xf32>
}
