// RUN: hla-opt %s --hla-chunk=chunk-size=16 | FileCheck %s

// Tests that hla-chunk lowers a packed `segment -> total` to one loop per
// (sequence, head), each over its own chunk slots of the run-time slot
// table (after the offsets are checked), writing its [N, H, ...] row.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @total
// CHECK-SAME: %[[CU:[^:]+]]: tensor<4xi32>
// CHECK: cf.assert
// CHECK: %[[L:.+]]:2 = scf.forall (%[[S:.+]], %[[H:.+]]) in (3, 2) shared_outs
// CHECK: scf.for
// CHECK: hla.combine
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[S]], %[[H]], 0, 0] [1, 1, 4, 4]
// CHECK: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[S]], %[[H]]] [1, 1]
// CHECK: return %[[L]]#0, %[[L]]#1 : tensor<3x2x4x4xf32>, tensor<3x2xf32>
func.func @total(%k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x4xf32>, %cu: tensor<4xi32>) -> (tensor<3x2x4x4xf32>, tensor<3x2xf32>) {
  %p, %r = hla.segment #la(%k, %v) : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>) -> (tensor<1x40x2x4x4xf32>, tensor<1x40x2xf32>)
  %P, %R = hla.total #la(%p, %r) cu_seqlens(%cu) : (tensor<1x40x2x4x4xf32>, tensor<1x40x2xf32>, tensor<4xi32>) -> (tensor<3x2x4x4xf32>, tensor<3x2xf32>)
  return %P, %R : tensor<3x2x4x4xf32>, tensor<3x2xf32>
}
