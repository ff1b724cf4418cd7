// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand rewrites hla.hla3 under the exact third-order scan
// monoid; with decay, Q2 is weighted from the segment start (its rule reads
// ρ_A) and the cross terms of X pick up one ρ_B.

// CHECK-DAG: #[[$PLAIN:hla3[_0-9]*]] = #hla.monoid<"hla3" inputs(q: [d], k: [d], v: [dv]) state(S: [d, d], P: [d, dv], Q2: [d, d], R: [d, dv], U: [d, d], X: [d, dv]) token(S = k * k.T, P = k * v.T, Q2 = q * q.T, R = q * q.T * k * v.T, U = k * k.T * q * q.T, X = k * k.T * q * q.T * k * v.T) combine(S = S.a + S.b, P = P.a + P.b, Q2 = Q2.a + Q2.b, R = R.a + R.b + Q2.b * P.a, U = U.a + U.b + S.a * Q2.b, X = X.a + X.b + S.a * Q2.b * P.a + S.a * R.b + U.b * P.a) readout(num = q.T * X)>
// CHECK-DAG: #[[$DECAYED:hla3[_0-9]*]] = #hla.monoid<"hla3" {{.*}} params(gamma = 5.000000e-01) state(S: [d, d], P: [d, dv], m: [d], Q2: [d, d], R: [d, dv], Rm: [d], U: [d, d], X: [d, dv], x: [d], rho: [] eye) token({{.*}}Q2 = gamma * q * q.T,{{.*}}rho = gamma) combine({{.*}}Q2 = Q2.a + rho.a * Q2.b,{{.*}}X = rho.b * X.a + X.b + rho.b * S.a * Q2.b * P.a + rho.b * S.a * R.b + rho.b * U.b * P.a, x = rho.b * x.a + x.b + rho.b * S.a * Q2.b * m.a + rho.b * S.a * Rm.b + rho.b * U.b * m.a, rho = rho.a * rho.b) readout(num = q.T * X, den = q.T * x)>

// The carried state is (S, P, X).
// CHECK-LABEL: func.func @plain
// CHECK: %[[SEG:.+]]:6 = hla.segment #[[$PLAIN]]
// CHECK: %[[PS:.+]]:3 = hla.scan #[[$PLAIN]]
// CHECK: hla.readout #[[$PLAIN]](%{{.+}}) state(%[[PS]]#0, %[[PS]]#1, %[[PS]]#2)
func.func @plain(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.hla3 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}

// The carried state is (S, P, m, X, x).
// CHECK-LABEL: func.func @decayed_normalized
// CHECK: %[[SEG:.+]]:10 = hla.segment #[[$DECAYED]]
// CHECK: %[[PS:.+]]:5 = hla.scan #[[$DECAYED]]
// CHECK: hla.readout #[[$DECAYED]]
func.func @decayed_normalized(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.hla3 %q, %k, %v {scale = 1.0 : f64, decay = 0.5 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
