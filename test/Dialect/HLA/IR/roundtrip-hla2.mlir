// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.hla2 round-trips with every option and with its masked and
// unmasked, normalized and unnormalized state layouts.

// CHECK-LABEL: func.func @defaults
// CHECK: hla.hla2 %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x200x2x32xf32>
func.func @defaults(%q: tensor<1x200x2x32xf32>, %k: tensor<1x200x2x32xf32>, %v: tensor<1x200x2x32xf32>) -> tensor<1x200x2x32xf32> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>) -> tensor<1x200x2x32xf32>
  return %o : tensor<1x200x2x32xf32>
}

// CHECK-LABEL: func.func @options
// CHECK: hla.hla2
// CHECK-SAME: decay = 5.000000e-01 : f64
// CHECK-SAME: eps = 1.000000e-02 : f64
// CHECK-SAME: masked = false
// CHECK-SAME: normalize = true
// CHECK-SAME: ridge = 2.500000e-01 : f64
// CHECK-SAME: scale = 2.000000e+00 : f64
func.func @options(%q: tensor<2x16x4x8xf16>, %k: tensor<2x16x1x8xf16>, %v: tensor<2x16x1x4xf16>) -> tensor<2x16x4x4xf16> {
  %o = hla.hla2 %q, %k, %v {decay = 0.5 : f64, eps = 1.0e-2 : f64, masked = false, normalize = true, ridge = 0.25 : f64, scale = 2.0 : f64} : (tensor<2x16x4x8xf16>, tensor<2x16x1x8xf16>, tensor<2x16x1x4xf16>) -> tensor<2x16x4x4xf16>
  return %o : tensor<2x16x4x4xf16>
}

// The masked, unnormalized state is (S, C, G).
// CHECK-LABEL: func.func @masked_state
// CHECK: hla.hla2 {{.*}} initial_state(
// CHECK-SAME: -> (tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>)
func.func @masked_state(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %s: tensor<1x2x4x4xf32>, %c: tensor<1x2x4x6xf32>, %g: tensor<1x2x4x6xf32>) -> tensor<1x8x2x6xf32> {
  %o, %s1, %c1, %g1 = hla.hla2 %q, %k, %v initial_state(%s, %c, %g) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>) -> (tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>)
  return %o : tensor<1x8x2x6xf32>
}

// The unmasked, normalized state is (S, C, m).
// CHECK-LABEL: func.func @unmasked_normalized_state
// CHECK: hla.hla2
// CHECK-SAME: -> (tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4xf32>)
func.func @unmasked_normalized_state(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %o, %s, %c, %m = hla.hla2 %q, %k, %v {masked = false, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> (tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4xf32>)
  return %o : tensor<1x8x2x6xf32>
}
