// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand rewrites hla.linear_attention into segment, scan and
// readout under the first-order monoid; decay brings back the ρ component
// and normalize the key sum m and the denominator.

// CHECK-DAG: #[[$PLAIN:linear_attention[_0-9]*]] = #hla.monoid<"linear_attention" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv]) token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>
// CHECK-DAG: #[[$DECAYED:linear_attention[_0-9]*]] = #hla.monoid<"linear_attention" inputs(q: [d], k: [d], v: [dv]) params(scale = 5.000000e-01, gamma = 9.000000e-01) state(P: [d, dv], m: [d], rho: [] eye) token(P = k * v.T, m = k, rho = gamma) combine(P = rho.b * P.a + P.b, m = rho.b * m.a + m.b, rho = rho.a * rho.b) readout(num = scale * q.T * P, den = scale * q.T * m)>

// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x2x4xf32>, %[[K:.+]]: tensor<1x8x2x4xf32>, %[[V:.+]]: tensor<1x8x2x6xf32>)
// CHECK: %[[P:.+]] = hla.segment #[[$PLAIN]](%[[K]], %[[V]]) : {{.*}} -> tensor<1x8x2x4x6xf32>
// CHECK: %[[PS:.+]] = hla.scan #[[$PLAIN]](%[[P]]) : (tensor<1x8x2x4x6xf32>) -> tensor<1x8x2x4x6xf32>
// CHECK: %[[O:.+]] = hla.readout #[[$PLAIN]](%[[Q]]) state(%[[PS]]) {{.*}} -> tensor<1x8x2x6xf32>
// CHECK: return %[[O]]
// CHECK-NOT: hla.linear_attention
func.func @plain(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.linear_attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}

// CHECK-LABEL: func.func @decayed_normalized
// CHECK: %[[SEG:.+]]:3 = hla.segment #[[$DECAYED]]
// CHECK-SAME: -> (tensor<1x8x2x4x6xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>)
// CHECK: %[[PS:.+]]:2 = hla.scan #[[$DECAYED]](%[[SEG]]#0, %[[SEG]]#1, %[[SEG]]#2)
// CHECK: hla.readout #[[$DECAYED]](%{{.+}}) state(%[[PS]]#0, %[[PS]]#1) {eps = 1.000000e-03 : f64}
func.func @decayed_normalized(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64, normalize = true, eps = 1.0e-3 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
