// RUN: hla-opt %s --hla-derive-vjp | FileCheck %s

// Tests that a head_decay argument is differentiated: its rates are the
// prefix_vjp's head_params (after a run-time check that each lies in
// (0, 1]), and their gradient, the prefix_vjp's last result, goes back in
// the argument's place; the grouped k and v are repeated to the query
// heads and their gradients summed, the rates (per query head) are not.

// CHECK: #[[$M:.+]] = #hla.monoid<"linear_attention"{{.*}}params(gamma = per_head)
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[G:[^:]+]]: tensor<4xf32>, %[[Q:[^:]+]]: tensor<1x8x4x4xf32>, %[[K:[^:]+]]: tensor<1x8x2x4xf32>, %[[V:[^:]+]]: tensor<1x8x2x3xf32>, %[[DO:[^:]+]]: tensor<1x8x4x3xf32>)
// CHECK-SAME:    -> (tensor<4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
// CHECK:         cf.assert %{{.+}}, "hla: head_decay rates must be in (0, 1]"
// CHECK:         %[[GR:[^ :]+]]:4 = hla.prefix_vjp #[[$M]](%[[Q]], %{{.+}}, %{{.+}}) cotangent(%[[DO]]) head_params(%[[G]])
// CHECK-SAME:      -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x3xf32>, tensor<4xf32>)
// CHECK:         return %[[GR]]#3, %[[GR]]#0,
func.func @main(%g: tensor<4xf32>, %q: tensor<1x8x4x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>) -> tensor<1x8x4x3xf32> {
  %o = hla.linear_attention %q, %k, %v head_decay(%g) {scale = 1.0 : f64} : (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<4xf32>) -> tensor<1x8x4x3xf32>
  return %o : tensor<1x8x4x3xf32>
}
