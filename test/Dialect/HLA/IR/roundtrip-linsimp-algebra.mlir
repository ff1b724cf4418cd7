// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that LinSimp's algebra ops, hla.feature_map and hla.anchor_readout,
// round-trip, the readout with anchors in and out and packed sequences.

#ls = #hla.monoid<"ls" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>

// CHECK-LABEL: func.func @feature_map
// CHECK: hla.feature_map %{{.+}}, %{{.+}} {scale = 1.250000e-01 : f64} : (tensor<1x8x2x4xbf16>, tensor<16x4xbf16>) -> tensor<1x8x2x16xf32>
func.func @feature_map(%k: tensor<1x8x2x4xbf16>, %omega: tensor<16x4xbf16>) -> tensor<1x8x2x16xf32> {
  %phi = hla.feature_map %k, %omega {scale = 0.125 : f64} : (tensor<1x8x2x4xbf16>, tensor<16x4xbf16>) -> tensor<1x8x2x16xf32>
  return %phi : tensor<1x8x2x16xf32>
}

// CHECK-LABEL: func.func @anchor_readout
// CHECK: hla.anchor_readout #{{.+}}(%{{.+}}, %{{.+}}, %{{.+}}) omega(%{{.+}}) state(%{{.+}}, %{{.+}}) anchors(%{{.+}}, %{{.+}}, %{{.+}}) cu_seqlens(%{{.+}}) {scale = 5.000000e-01 : f64, window = 4 : i64}
func.func @anchor_readout(%q: tensor<1x8x2x4xf32>, %r: tensor<1x8x2x4xf32>, %u: tensor<1x8x2x6xf32>, %omega: tensor<16x4xf32>,
                          %M: tensor<1x8x2x16x6xf32>, %a: tensor<1x8x2x16xf32>,
                          %ar: tensor<2x2x3x4xf32>, %au: tensor<2x2x3x6xf32>, %av: tensor<2x2x3xf32>, %cu: tensor<3xi64>) -> tensor<1x8x2x6xf32> {
  %o:4 = hla.anchor_readout #ls(%q, %r, %u) omega(%omega) state(%M, %a) anchors(%ar, %au, %av) cu_seqlens(%cu) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<16x4xf32>, tensor<1x8x2x16x6xf32>, tensor<1x8x2x16xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x6xf32>, tensor<2x2x3xf32>, tensor<3xi64>) -> (tensor<1x8x2x6xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x6xf32>, tensor<2x2x3xf32>)
  return %o#0 : tensor<1x8x2x6xf32>
}
