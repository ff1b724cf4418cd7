// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.readout round-trips, plain and normalized (with eps).

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], m: [d])
  token(P = k * v.T, m = k) combine(P = P.a + P.b, m = m.a + m.b)
  readout(num = q.T * P, den = q.T * m)>

// CHECK-LABEL: func.func @normalized
// CHECK: hla.readout #{{.+}}(%{{.+}}) state(%{{.+}}, %{{.+}}) {eps = 1.000000e-03 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x6xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x6xf16>
func.func @normalized(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x6xf32>, %m: tensor<1x8x2x4xf32>) -> tensor<1x8x2x6xf16> {
  %o = hla.readout #la(%q) state(%p, %m) {eps = 1.0e-3 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x6xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x6xf16>
  return %o : tensor<1x8x2x6xf16>
}
