// RUN: hla-opt %s --hla-derive-vjp | FileCheck %s

// Tests KDA's backward on grouped heads (four query heads on two K/V heads):
// every operand but q is repeated to the query heads, g and beta included
// (beta, of rank 3, without a feature dimension), the backward is one
// hla.prefix_vjp under the kda monoid with the gradients of all five
// inputs and of the initial state, and each repeated input's gradient is
// summed over its group.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<1x8x4x4xf32>, %[[K:[^:]+]]: tensor<1x8x2x4xf32>, %[[V:[^:]+]]: tensor<1x8x2x3xf32>, %[[G:[^:]+]]: tensor<1x8x2x4xf32>, %[[B:[^:]+]]: tensor<1x8x2xf32>, %[[S:[^:]+]]: tensor<1x4x4x3xf32>, %[[DO:[^:]+]]: tensor<1x8x4x3xf32>)
// CHECK-SAME:    -> (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x4x4x3xf32>)
// CHECK:         %[[GB:.+]] = linalg.broadcast ins(%[[G]] : tensor<1x8x2x4xf32>) outs(%{{.*}} : tensor<1x8x2x2x4xf32>) dimensions = [3]
// CHECK:         %[[GR:.+]] = tensor.collapse_shape %[[GB]] {{\[}}[0], [1], [2, 3], [4]] : tensor<1x8x2x2x4xf32> into tensor<1x8x4x4xf32>
// CHECK:         %[[BB:.+]] = linalg.broadcast ins(%[[B]] : tensor<1x8x2xf32>) outs(%{{.*}} : tensor<1x8x2x2xf32>) dimensions = [3]
// CHECK:         %[[BR:.+]] = tensor.collapse_shape %[[BB]] {{\[}}[0], [1], [2, 3]] : tensor<1x8x2x2xf32> into tensor<1x8x4xf32>
// CHECK:         %[[D:[^ :]+]]:6 = hla.prefix_vjp #{{.*}}(%[[Q]], %{{.*}}, %{{.*}}, %[[GR]], %[[BR]]) init(%[[S]]) cotangent(%[[DO]])
// CHECK:         %[[DBS:.+]] = tensor.expand_shape %[[D]]#4 {{\[}}[0], [1], [2, 3]] output_shape [1, 8, 2, 2] : tensor<1x8x4xf32> into tensor<1x8x2x2xf32>
// CHECK:         %[[DB:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[DBS]] : tensor<1x8x2x2xf32>) outs(%{{.*}} : tensor<1x8x2xf32>)
// CHECK:         return %[[D]]#0, %{{.*}}, %{{.*}}, %{{.*}}, %[[DB]], %[[D]]#5
func.func @main(%q: tensor<1x8x4x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %g: tensor<1x8x2x4xf32>, %beta: tensor<1x8x2xf32>, %s: tensor<1x4x4x3xf32>) -> tensor<1x8x4x3xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta initial_state(%s) {scale = 0.5 : f64} : (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x4x4x3xf32>) -> tensor<1x8x4x3xf32>
  return %o : tensor<1x8x4x3xf32>
}
