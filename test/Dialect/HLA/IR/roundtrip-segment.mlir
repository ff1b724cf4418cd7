// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.segment round-trips, including key/value inputs with fewer
// heads than the results (grouped heads) and a scalar input.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>
#gated = #hla.monoid<"gated" inputs(k: [d], v: [dv], beta: []) state(S: [d, dv])
  token(S = beta * k * v.T) combine(S = S.a + S.b)>

// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[K:.+]]: tensor<1x8x2x4xf32>, %[[V:.+]]: tensor<1x8x2x6xf32>)
// CHECK: hla.segment #{{.+}}(%[[K]], %[[V]]) : (tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x4x4x6xf32>
func.func @grouped(%k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x4x4x6xf32> {
  %p = hla.segment #la(%k, %v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x4x4x6xf32>
  return %p : tensor<1x8x4x4x6xf32>
}

// CHECK-LABEL: func.func @scalar_input
// CHECK: hla.segment #{{.+}}(%{{.+}}, %{{.+}}, %{{.+}}) : (tensor<2x5x4xbf16>, tensor<2x5x3xbf16>, tensor<2x5xbf16>) -> tensor<2x5x4x3xf32>
func.func @scalar_input(%k: tensor<2x5x4xbf16>, %v: tensor<2x5x3xbf16>, %beta: tensor<2x5xbf16>) -> tensor<2x5x4x3xf32> {
  %s = hla.segment #gated(%k, %v, %beta) : (tensor<2x5x4xbf16>, tensor<2x5x3xbf16>, tensor<2x5xbf16>) -> tensor<2x5x4x3xf32>
  return %s : tensor<2x5x4x3xf32>
}
