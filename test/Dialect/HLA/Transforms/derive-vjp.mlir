// RUN: hla-opt %s --split-input-file --hla-derive-vjp | FileCheck %s

// Tests that @main becomes its backward: q, k, v and the output's cotangent
// in, their gradients out in argument order, through hla.prefix_vjp under
// the op's monoid (its options, here decay and normalize, applied; its eps
// kept).
// CHECK: #[[$M:.+]] = #hla.monoid<"hla2"{{.*}}params(scale = 5.000000e-01, gamma = 9.000000e-01)
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<1x8x2x4xf32>, %[[K:[^:]+]]: tensor<1x8x2x4xf32>, %[[V:[^:]+]]: tensor<1x8x2x3xf32>, %[[DO:[^:]+]]: tensor<1x8x2x3xf32>)
// CHECK-SAME:    -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
// CHECK:         %[[G:[^ :]+]]:3 = hla.prefix_vjp #[[$M]](%[[Q]], %[[K]], %[[V]]) cotangent(%[[DO]]) {eps = 1.000000e-03 : f64}
// CHECK:         return %[[G]]#0, %[[G]]#1, %[[G]]#2
func.func @main(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>) -> tensor<1x8x2x3xf32> {
  %o = hla.hla2 %q, %k, %v {decay = 0.9 : f64, normalize = true, eps = 1.0e-3 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>) -> tensor<1x8x2x3xf32>
  return %o : tensor<1x8x2x3xf32>
}

// -----

// Tests that the gradients come back in argument order whatever order the
// op reads its arguments in.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[V:[^:]+]]: tensor<1x8x2x3xf32>, %[[Q:[^:]+]]: tensor<1x8x2x4xf32>, %[[K:[^:]+]]: tensor<1x8x2x4xf32>, %[[DO:[^:]+]]: tensor<1x8x2x3xf32>)
// CHECK:         %[[G:[^ :]+]]:3 = hla.prefix_vjp #{{.*}}(%[[Q]], %[[K]], %[[V]]) cotangent(%[[DO]])
// CHECK:         return %[[G]]#2, %[[G]]#0, %[[G]]#1
func.func @main(%v: tensor<1x8x2x3xf32>, %q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>) -> tensor<1x8x2x3xf32> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>) -> tensor<1x8x2x3xf32>
  return %o : tensor<1x8x2x3xf32>
}
