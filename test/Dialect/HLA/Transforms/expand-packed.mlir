// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand restarts the scan at packed-sequence boundaries:
// cu_seqlens goes to the scan, and the initial/final states are per sequence.

// CHECK-LABEL: func.func @packed
// CHECK-SAME: %[[P0:[^:]+]]: tensor<3x2x4x6xf32>, %[[CU:[^:]+]]: tensor<4xi32>)
// CHECK: %[[SC:.+]]:2 = hla.scan #{{.+}}(%{{.+}}) init(%[[P0]]) cu_seqlens(%[[CU]])
// CHECK-SAME: -> (tensor<1x40x2x4x6xf32>, tensor<3x2x4x6xf32>)
// CHECK: return %{{.+}}, %[[SC]]#1
func.func @packed(%q: tensor<1x40x2x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x6xf32>, %p0: tensor<3x2x4x6xf32>, %cu: tensor<4xi32>) -> (tensor<1x40x2x6xf32>, tensor<3x2x4x6xf32>) {
  %o, %p = hla.linear_attention %q, %k, %v initial_state(%p0) cu_seqlens(%cu) : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2x6xf32>, tensor<3x2x4x6xf32>, tensor<4xi32>) -> (tensor<1x40x2x6xf32>, tensor<3x2x4x6xf32>)
  return %o, %p : tensor<1x40x2x6xf32>, tensor<3x2x4x6xf32>
}
