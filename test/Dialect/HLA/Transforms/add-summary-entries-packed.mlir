// RUN: hla-opt %s --hla-add-summary-entries | FileCheck %s

// Tests that with packed sequences the summary keeps the offsets argument
// and returns one total per sequence ([N = 3, H, ...]), and the combine
// works on per-sequence states.

// CHECK-LABEL: func.func @main_summary
// CHECK-SAME: %[[CU:[^:]+]]: tensor<4xi32>) -> (tensor<3x2x4x4xf32>, tensor<3x2x4x4xf32>, tensor<3x2x4x4xf32>)
// CHECK: hla.total #{{.+}}(%{{.+}}, %{{.+}}, %{{.+}}) cu_seqlens(%[[CU]])
// CHECK-LABEL: func.func @main_combine
// CHECK-SAME: -> (tensor<3x2x4x4xf32>, tensor<3x2x4x4xf32>, tensor<3x2x4x4xf32>)
func.func @main(%q: tensor<1x40x2x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x4xf32>, %cu: tensor<4xi32>) -> tensor<1x40x2x4xf32> {
  %o = hla.hla2 %q, %k, %v cu_seqlens(%cu) : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<4xi32>) -> tensor<1x40x2x4xf32>
  return %o : tensor<1x40x2x4xf32>
}
