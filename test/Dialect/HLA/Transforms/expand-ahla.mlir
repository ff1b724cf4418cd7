// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand rewrites hla.ahla under the asymmetric monoid: R is a
// plain sum even with decay (the erratum), and R is not carried (it is only
// read from the right operand).

// CHECK-DAG: #[[$PLAIN:ahla[_0-9]*]] = #hla.monoid<"ahla" inputs(q: [d], k: [d], v: [dv]) state(R: [d, d], P: [d, dv], E: [d, dv]) token(R = k * q.T, P = k * v.T, E = k * q.T * k * v.T) combine(R = R.a + R.b, P = P.a + P.b, E = E.a + E.b + R.b * P.a) readout(num = q.T * E)>
// CHECK-DAG: #[[$DECAYED:ahla[_0-9]*]] = #hla.monoid<"ahla" inputs(q: [d], k: [d], v: [dv]) params(gamma = 8.000000e-01) state(R: [d, d], P: [d, dv], m: [d], E: [d, dv], n: [d], rho: [] eye) token(R = k * q.T, P = k * v.T, m = k, E = k * q.T * k * v.T, n = k * q.T * k, rho = gamma) combine(R = R.a + R.b, P = rho.b * P.a + P.b, m = rho.b * m.a + m.b, E = rho.b * E.a + E.b + rho.b * R.b * P.a, n = rho.b * n.a + n.b + rho.b * R.b * m.a, rho = rho.a * rho.b) readout(num = q.T * E, den = q.T * n)>

// CHECK-LABEL: func.func @plain
// CHECK: %[[SEG:.+]]:3 = hla.segment #[[$PLAIN]]
// CHECK: %[[PS:.+]]:2 = hla.scan #[[$PLAIN]](%[[SEG]]#0, %[[SEG]]#1, %[[SEG]]#2)
// CHECK-SAME: -> (tensor<1x8x2x4x6xf32>, tensor<1x8x2x4x6xf32>)
// CHECK: hla.readout #[[$PLAIN]](%{{.+}}) state(%[[PS]]#0, %[[PS]]#1)
func.func @plain(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.ahla %q, %k, %v {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}

// CHECK-LABEL: func.func @decayed_normalized
// CHECK: hla.segment #[[$DECAYED]]
// CHECK: %[[PS:.+]]:4 = hla.scan #[[$DECAYED]]
// CHECK: hla.readout #[[$DECAYED]](%{{.+}}) state(%[[PS]]#0, %[[PS]]#1, %[[PS]]#2, %[[PS]]#3)
func.func @decayed_normalized(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.ahla %q, %k, %v {scale = 1.0 : f64, decay = 0.8 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
