// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.linear_attention round-trips with its defaults, every
// option, grouped heads, dynamic sizes, and state in/out with cu_seqlens.

// CHECK-LABEL: func.func @defaults
// CHECK-SAME: (%[[Q:.+]]: tensor<1x64x2x16xf32>, %[[K:.+]]: tensor<1x64x2x16xf32>, %[[V:.+]]: tensor<1x64x2x16xf32>)
// CHECK: hla.linear_attention %[[Q]], %[[K]], %[[V]] :
// CHECK-SAME: -> tensor<1x64x2x16xf32>
func.func @defaults(%q: tensor<1x64x2x16xf32>, %k: tensor<1x64x2x16xf32>, %v: tensor<1x64x2x16xf32>) -> tensor<1x64x2x16xf32> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x64x2x16xf32>, tensor<1x64x2x16xf32>, tensor<1x64x2x16xf32>) -> tensor<1x64x2x16xf32>
  return %o : tensor<1x64x2x16xf32>
}

// CHECK-LABEL: func.func @options
// CHECK: hla.linear_attention
// CHECK-SAME: decay = 9.000000e-01 : f64
// CHECK-SAME: eps = 1.000000e-03 : f64
// CHECK-SAME: normalize = true
// CHECK-SAME: scale = 1.000000e+00 : f64
func.func @options(%q: tensor<2x8x4x8xbf16>, %k: tensor<2x8x2x8xbf16>, %v: tensor<2x8x2x16xbf16>) -> tensor<2x8x4x16xbf16> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64, eps = 1.0e-3 : f64, normalize = true, scale = 1.0 : f64} : (tensor<2x8x4x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x16xbf16>) -> tensor<2x8x4x16xbf16>
  return %o : tensor<2x8x4x16xbf16>
}

// CHECK-LABEL: func.func @dynamic
// CHECK: hla.linear_attention {{.*}} : (tensor<?x?x2x8xf16>, tensor<?x?x2x8xf16>, tensor<?x?x2x8xf16>) -> tensor<?x?x2x8xf16>
func.func @dynamic(%q: tensor<?x?x2x8xf16>, %k: tensor<?x?x2x8xf16>, %v: tensor<?x?x2x8xf16>) -> tensor<?x?x2x8xf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<?x?x2x8xf16>, tensor<?x?x2x8xf16>, tensor<?x?x2x8xf16>) -> tensor<?x?x2x8xf16>
  return %o : tensor<?x?x2x8xf16>
}

// CHECK-LABEL: func.func @state
// CHECK-SAME: %[[P0:[^:]+]]: tensor<3x2x8x8xf32>, %[[CU:[^:]+]]: tensor<4xi64>
// CHECK: hla.linear_attention %{{.+}}, %{{.+}}, %{{.+}} initial_state(%[[P0]]) cu_seqlens(%[[CU]]) :
// CHECK-SAME: -> (tensor<1x40x2x8xf32>, tensor<3x2x8x8xf32>)
func.func @state(%q: tensor<1x40x2x8xf32>, %k: tensor<1x40x2x8xf32>, %v: tensor<1x40x2x8xf32>, %p0: tensor<3x2x8x8xf32>, %cu: tensor<4xi64>) -> (tensor<1x40x2x8xf32>, tensor<3x2x8x8xf32>) {
  %o, %p = hla.linear_attention %q, %k, %v initial_state(%p0) cu_seqlens(%cu) : (tensor<1x40x2x8xf32>, tensor<1x40x2x8xf32>, tensor<1x40x2x8xf32>, tensor<3x2x8x8xf32>, tensor<4xi64>) -> (tensor<1x40x2x8xf32>, tensor<3x2x8x8xf32>)
  return %o, %p : tensor<1x40x2x8xf32>, tensor<3x2x8x8xf32>
}
