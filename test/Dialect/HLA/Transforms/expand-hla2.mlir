// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand rewrites hla.hla2 under the masked second-order
// monoid (G and h decay by ρ_B², the erratum), with ridge as readout terms,
// and under the unmasked monoid without cross summaries.

// CHECK-DAG: #[[$MASKED:hla2[_0-9]*]] = #hla.monoid<"hla2" inputs(q: [d], k: [d], v: [dv]) params(scale = 5.000000e-01) state(S: [d, d], C: [d, dv], G: [d, dv]) token(S = k * k.T, C = scale * q * v.T) combine(S = S.a + S.b, C = C.a + C.b, G = G.a + G.b + S.b * C.a) readout(num = scale * q.T * S * C - scale * q.T * G)>
// CHECK-DAG: #[[$DECAYED:hla2[_0-9]*]] = #hla.monoid<"hla2" inputs(q: [d], k: [d], v: [dv]) params(gamma = 9.000000e-01, ridge = 2.500000e-01) state(S: [d, d], C: [d, dv], m: [d], G: [d, dv], h: [d], rho: [] eye) token(S = k * k.T, C = q * v.T, m = q, rho = gamma) combine(S = rho.b * S.a + S.b, C = rho.b * C.a + C.b, m = rho.b * m.a + m.b, G = rho.b * rho.b * G.a + G.b + rho.b * S.b * C.a, h = rho.b * rho.b * h.a + h.b + rho.b * S.b * m.a, rho = rho.a * rho.b) readout(num = q.T * S * C - q.T * G + ridge * q.T * C, den = q.T * S * m - q.T * h + ridge * q.T * m)>
// CHECK-DAG: #[[$UNMASKED:hla2_unmasked[_0-9]*]] = #hla.monoid<"hla2_unmasked" inputs(q: [d], k: [d], v: [dv]) state(S: [d, d], C: [d, dv]) token(S = k * k.T, C = q * v.T) combine(S = S.a + S.b, C = C.a + C.b) readout(num = q.T * S * C)>

// CHECK-LABEL: func.func @masked
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x2x4xf32>, %[[K:.+]]: tensor<1x8x2x4xf32>, %[[V:.+]]: tensor<1x8x2x6xf32>)
// CHECK: %[[SEG:.+]]:3 = hla.segment #[[$MASKED]](%[[Q]], %[[K]], %[[V]])
// CHECK-SAME: -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x6xf32>, tensor<1x8x2x4x6xf32>)
// CHECK: %[[PS:.+]]:3 = hla.scan #[[$MASKED]](%[[SEG]]#0, %[[SEG]]#1, %[[SEG]]#2)
// CHECK: %[[O:.+]] = hla.readout #[[$MASKED]](%[[Q]]) state(%[[PS]]#0, %[[PS]]#1, %[[PS]]#2)
// CHECK: return %[[O]]
func.func @masked(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}

// CHECK-LABEL: func.func @decay_ridge_normalize
// CHECK: %[[SEG:.+]]:6 = hla.segment #[[$DECAYED]]
// CHECK: %[[PS:.+]]:5 = hla.scan #[[$DECAYED]]
// CHECK: hla.readout #[[$DECAYED]]
func.func @decay_ridge_normalize(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64, decay = 0.9 : f64, ridge = 0.25 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}

// CHECK-LABEL: func.func @unmasked
// CHECK: %[[SEG:.+]]:2 = hla.segment #[[$UNMASKED]]
// CHECK: %[[PS:.+]]:2 = hla.scan #[[$UNMASKED]](%[[SEG]]#0, %[[SEG]]#1)
// CHECK: hla.readout #[[$UNMASKED]](%{{.+}}) state(%[[PS]]#0, %[[PS]]#1)
func.func @unmasked(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64, masked = false} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
