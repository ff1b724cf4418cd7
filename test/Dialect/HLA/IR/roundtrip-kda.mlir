// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.kda round-trips with grouped heads, a scale, and its state
// S [dk, dv] carried in and out over packed sequences.

// CHECK-LABEL: func.func @defaults
// CHECK: hla.kda %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x16x2x8xf32>
func.func @defaults(%q: tensor<1x16x2x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>, %g: tensor<1x16x2x8xf32>, %beta: tensor<1x16x2xf32>) -> tensor<1x16x2x8xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2xf32>) -> tensor<1x16x2x8xf32>
  return %o : tensor<1x16x2x8xf32>
}

// CHECK-LABEL: func.func @state
// CHECK: hla.kda {{.*}} initial_state(%{{.+}}) cu_seqlens(%{{.+}}) {scale = 1.250000e-01 : f64}
// CHECK-SAME: -> (tensor<1x16x4x6xbf16>, tensor<2x4x8x6xf32>)
func.func @state(%q: tensor<1x16x4x8xbf16>, %k: tensor<1x16x2x8xbf16>, %v: tensor<1x16x2x6xbf16>, %g: tensor<1x16x2x8xbf16>, %beta: tensor<1x16x2xbf16>, %s0: tensor<2x4x8x6xf32>, %cu: tensor<3xi32>) -> tensor<1x16x4x6xbf16> {
  %o, %s = hla.kda %q, %k, %v, %g, %beta initial_state(%s0) cu_seqlens(%cu) {scale = 0.125 : f64} : (tensor<1x16x4x8xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x2x6xbf16>, tensor<1x16x2x8xbf16>, tensor<1x16x2xbf16>, tensor<2x4x8x6xf32>, tensor<3xi32>) -> (tensor<1x16x4x6xbf16>, tensor<2x4x8x6xf32>)
  return %o : tensor<1x16x4x6xbf16>
}
