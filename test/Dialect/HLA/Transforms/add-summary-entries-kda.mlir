// RUN: hla-opt %s --hla-add-summary-entries=function=layer | FileCheck %s

// Tests that KDA's summary returns the span's transition M (d x d, not
// carried) beside S, that its combine carries S through both, and that its
// transposed combine (no index plan: the combine's linalg form
// differentiated in reverse) is μ = Mᵀ λ, a contraction over M's rows.

// CHECK-LABEL: func.func @layer_summary
// CHECK-SAME: -> (tensor<2x3x4x4xf32>, tensor<2x3x4x6xf32>)
// CHECK: hla.total #{{.+}} : {{.*}} -> (tensor<2x3x4x4xf32>, tensor<2x3x4x6xf32>)

// CHECK-LABEL: func.func @layer_combine
// CHECK-SAME: (%[[S:[^:]+]]: tensor<2x3x4x6xf32>, %[[TM:[^:]+]]: tensor<2x3x4x4xf32>, %[[TS:[^:]+]]: tensor<2x3x4x6xf32>) -> tensor<2x3x4x6xf32>
// CHECK: hla.combine #{{.+}}(%{{.+}}, %[[S]]), (%[[TM]], %[[TS]])

// CHECK-LABEL: func.func @layer_combine_vjp
// CHECK-SAME: (%[[S2:[^:]+]]: tensor<2x3x4x6xf32>, %[[TM2:[^:]+]]: tensor<2x3x4x4xf32>, %[[TS2:[^:]+]]: tensor<2x3x4x6xf32>, %[[L:[^:]+]]: tensor<2x3x4x6xf32>) -> tensor<2x3x4x6xf32>
// CHECK: %[[DL:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[TS2]], %[[L]] : {{.*}})
// CHECK: %[[MU:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%[[TM2]], %[[S2]], %[[DL]] : {{.*}})
// CHECK: return %[[MU]]
func.func @layer(%q: tensor<2x16x3x4xbf16>, %k: tensor<2x16x3x4xbf16>, %v: tensor<2x16x3x6xbf16>, %g: tensor<2x16x3x4xbf16>, %beta: tensor<2x16x3xbf16>) -> tensor<2x16x3x6xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<2x16x3x4xbf16>, tensor<2x16x3x4xbf16>, tensor<2x16x3x6xbf16>, tensor<2x16x3x4xbf16>, tensor<2x16x3xbf16>) -> tensor<2x16x3x6xbf16>
  return %o : tensor<2x16x3x6xbf16>
}
