// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.hla3 round-trips, with options and its state (S, P, X), or
// (S, P, m, X, x) when normalized.

// CHECK-LABEL: func.func @defaults
// CHECK: hla.hla3 %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x32x2x8xf16>
func.func @defaults(%q: tensor<1x32x2x8xf16>, %k: tensor<1x32x2x8xf16>, %v: tensor<1x32x2x8xf16>) -> tensor<1x32x2x8xf16> {
  %o = hla.hla3 %q, %k, %v : (tensor<1x32x2x8xf16>, tensor<1x32x2x8xf16>, tensor<1x32x2x8xf16>) -> tensor<1x32x2x8xf16>
  return %o : tensor<1x32x2x8xf16>
}

// CHECK-LABEL: func.func @state
// CHECK: hla.hla3 {{.*}} initial_state(
// CHECK-SAME: decay = 8.000000e-01 : f64
// CHECK-SAME: -> (tensor<1x32x2x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
func.func @state(%q: tensor<1x32x2x8xf32>, %k: tensor<1x32x2x8xf32>, %v: tensor<1x32x2x4xf32>, %s: tensor<1x2x8x8xf32>, %p: tensor<1x2x8x4xf32>, %x: tensor<1x2x8x4xf32>) -> tensor<1x32x2x4xf32> {
  %o, %s1, %p1, %x1 = hla.hla3 %q, %k, %v initial_state(%s, %p, %x) {decay = 0.8 : f64} : (tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> (tensor<1x32x2x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
  return %o : tensor<1x32x2x4xf32>
}

// CHECK-LABEL: func.func @normalized_state
// CHECK: hla.hla3
// CHECK-SAME: -> (tensor<1x32x2x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
func.func @normalized_state(%q: tensor<1x32x2x8xf32>, %k: tensor<1x32x2x8xf32>, %v: tensor<1x32x2x4xf32>) -> tensor<1x32x2x4xf32> {
  %o, %s, %p, %m, %x, %xn = hla.hla3 %q, %k, %v {normalize = true} : (tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x4xf32>) -> (tensor<1x32x2x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
  return %o : tensor<1x32x2x4xf32>
}
