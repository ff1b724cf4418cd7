// RUN: hla-opt %s --hla-chunk=chunk-size=16 | FileCheck %s

// Tests that hla-chunk lowers `segment -> total` along T to one loop per
// (batch entry, head) over the sequence's 3 chunks (40 tokens), folding
// every component's chunk summary into a carry that starts at the identity
// (rho's: 1), and reshapes the [B, 1, H, ...] results to [B, H, ...].

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @total
// CHECK-NOT: hla.segment
// CHECK: %[[RUNS:.+]]:2 = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 1, 2)
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x4xf32>, tensor<f32>)
// CHECK: hla.combine #{{.+}}
// CHECK: %[[P:.+]] = tensor.collapse_shape %[[RUNS]]#0 {{\[}}[0, 1], [2], [3], [4]] : tensor<1x1x2x4x4xf32> into tensor<1x2x4x4xf32>
// CHECK: %[[R:.+]] = tensor.collapse_shape %[[RUNS]]#1 {{\[}}[0, 1], [2]] : tensor<1x1x2xf32> into tensor<1x2xf32>
// CHECK: return %[[P]], %[[R]]
func.func @total(%k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>) {
  %p, %r = hla.segment #la(%k, %v) : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>) -> (tensor<1x40x2x4x4xf32>, tensor<1x40x2xf32>)
  %P, %R = hla.total #la(%p, %r) : (tensor<1x40x2x4x4xf32>, tensor<1x40x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
  return %P, %R : tensor<1x2x4x4xf32>, tensor<1x2xf32>
}
