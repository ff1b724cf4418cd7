// RUN: hla-opt %s --hla-lower-scans | FileCheck %s

// Tests that a packed scan restarts at every offset of cu_seqlens: an outer
// loop over sequences takes each one's initial state, an inner loop runs
// from cu[s] to cu[s+1], and the last carry is that sequence's final state.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @packed
// CHECK-SAME: %[[INIT:[^:]+]]: tensor<3x2x4x3xf32>, %[[CU:[^:]+]]: tensor<4xi32>)
// CHECK: scf.for %[[S:.+]] = %{{.+}} to %{{.+}} step
// CHECK:   %[[MINE:.+]] = tensor.extract_slice %[[INIT]][%[[S]], 0, 0, 0] [1, 2, 4, 3]
// CHECK:   %[[BEGIN:.+]] = tensor.extract %[[CU]][%[[S]]]
// CHECK:   %[[END:.+]] = tensor.extract %[[CU]][%{{.+}}]
// CHECK:   %[[INNER:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[MINE]]
// CHECK:     hla.combine
// CHECK:   tensor.insert_slice %[[INNER]]#0 into %{{.+}}[%[[S]], 0, 0, 0] [1, 2, 4, 3]
func.func @packed(%p: tensor<1x9x2x4x3xf32>, %init: tensor<3x2x4x3xf32>, %cu: tensor<4xi32>) -> (tensor<1x9x2x4x3xf32>, tensor<3x2x4x3xf32>) {
  %s, %f = hla.scan #la(%p) init(%init) cu_seqlens(%cu) : (tensor<1x9x2x4x3xf32>, tensor<3x2x4x3xf32>, tensor<4xi32>) -> (tensor<1x9x2x4x3xf32>, tensor<3x2x4x3xf32>)
  return %s, %f : tensor<1x9x2x4x3xf32>, tensor<3x2x4x3xf32>
}
