// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.ahla round-trips, with options and its state (P, E), or
// (P, m, E, n) when normalized.

// CHECK-LABEL: func.func @defaults
// CHECK: hla.ahla %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x16x2x8xf32>
func.func @defaults(%q: tensor<1x16x2x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32> {
  %o = hla.ahla %q, %k, %v : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32>
  return %o : tensor<1x16x2x8xf32>
}

// CHECK-LABEL: func.func @normalized_state
// CHECK: hla.ahla
// CHECK-SAME: decay = 7.500000e-01 : f64
// CHECK-SAME: normalize = true
// CHECK-SAME: -> (tensor<1x16x2x4xbf16>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
func.func @normalized_state(%q: tensor<1x16x2x8xbf16>, %k: tensor<1x16x2x8xbf16>, %v: tensor<1x16x2x4xbf16>) -> tensor<1x16x2x4xbf16> {
  %o, %p, %m, %e, %n = hla.ahla %q, %k, %v {decay = 0.75 : f64, normalize = true} : (tensor<1x16x2x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x2x4xbf16>) -> (tensor<1x16x2x4xbf16>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
  return %o : tensor<1x16x2x4xbf16>
}
