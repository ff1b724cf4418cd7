// RUN: hla-opt %s --hla-derive-vjp | FileCheck %s

// Tests that hla-derive-vjp differentiates through states: @main(q, k, v,
// s0) -> (o, s1) becomes @main(q, k, v, s0, do, ds1) -> (dq, dk, dv, ds0),
// an hla.prefix_vjp from the initial state with the final state's cotangent.

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x8x2x4xf32>, %[[K:[^:]+]]: tensor<1x8x2x4xf32>, %[[V:[^:]+]]: tensor<1x8x2x3xf32>, %[[S:[^:]+]]: tensor<1x2x4x3xf32>, %[[DO:[^:]+]]: tensor<1x8x2x3xf32>, %[[DS:[^:]+]]: tensor<1x2x4x3xf32>)
// CHECK-SAME: -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>)
// CHECK: %[[G:.+]]:4 = hla.prefix_vjp #{{.+}}(%[[Q]], %[[K]], %[[V]]) init(%[[S]]) cotangent(%[[DO]]) final_cotangent(%[[DS]])
// CHECK: return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3
func.func @main(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %s: tensor<1x2x4x3xf32>) -> (tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>) {
  %o, %f = hla.linear_attention %q, %k, %v initial_state(%s) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>) -> (tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>)
  return %o, %f : tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>
}
