// RUN: hla-opt %s --hla-add-summary-entries=function=layer | FileCheck %s

// Tests that KDA's summary returns the span's transition M (d x d, not
// carried) beside S, and that its combine carries S through both; no
// transposed combine (KDA's backward is not derived).

// CHECK-LABEL: func.func @layer_summary
// CHECK-SAME: -> (tensor<2x3x4x4xf32>, tensor<2x3x4x6xf32>)
// CHECK: hla.total #{{.+}} : {{.*}} -> (tensor<2x3x4x4xf32>, tensor<2x3x4x6xf32>)

// CHECK-LABEL: func.func @layer_combine
// CHECK-SAME: (%[[S:[^:]+]]: tensor<2x3x4x6xf32>, %[[TM:[^:]+]]: tensor<2x3x4x4xf32>, %[[TS:[^:]+]]: tensor<2x3x4x6xf32>) -> tensor<2x3x4x6xf32>
// CHECK: hla.combine #{{.+}}(%{{.+}}, %[[S]]), (%[[TM]], %[[TS]])
// CHECK-NOT: @layer_combine_vjp
func.func @layer(%q: tensor<2x16x3x4xbf16>, %k: tensor<2x16x3x4xbf16>, %v: tensor<2x16x3x6xbf16>, %g: tensor<2x16x3x4xbf16>, %beta: tensor<2x16x3xbf16>) -> tensor<2x16x3x6xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<2x16x3x4xbf16>, tensor<2x16x3x4xbf16>, tensor<2x16x3x6xbf16>, tensor<2x16x3x4xbf16>, tensor<2x16x3xbf16>) -> tensor<2x16x3x6xbf16>
  return %o : tensor<2x16x3x6xbf16>
}
