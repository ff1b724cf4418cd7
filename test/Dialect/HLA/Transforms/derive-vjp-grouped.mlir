// RUN: hla-opt %s --hla-derive-vjp | FileCheck %s

// Tests the backward of grouped K/V heads (four query heads on two K/V
// heads, bf16): k and v are repeated to the query heads (head h reads K/V
// head h / 2), the op's backward runs on the repeated tensors, and the
// gradients of k and v are each summed over their group of two heads in f32
// and then rounded to bf16. q's gradient is the prefix_vjp's own.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<1x8x4x4xbf16>, %[[K:[^:]+]]: tensor<1x8x2x4xbf16>, %[[V:[^:]+]]: tensor<1x8x2x3xbf16>, %[[DO:[^:]+]]: tensor<1x8x4x3xbf16>)
// CHECK-SAME:    -> (tensor<1x8x4x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x3xbf16>)
// CHECK:         %[[KB:.+]] = linalg.broadcast ins(%[[K]] : tensor<1x8x2x4xbf16>) outs(%{{.*}} : tensor<1x8x2x2x4xbf16>) dimensions = [3]
// CHECK:         %[[KR:.+]] = tensor.collapse_shape %[[KB]] {{\[}}[0], [1], [2, 3], [4]] : tensor<1x8x2x2x4xbf16> into tensor<1x8x4x4xbf16>
// CHECK:         %[[VB:.+]] = linalg.broadcast ins(%[[V]] : tensor<1x8x2x3xbf16>) outs(%{{.*}} : tensor<1x8x2x2x3xbf16>) dimensions = [3]
// CHECK:         %[[VR:.+]] = tensor.collapse_shape %[[VB]] {{\[}}[0], [1], [2, 3], [4]] : tensor<1x8x2x2x3xbf16> into tensor<1x8x4x3xbf16>
// CHECK:         %[[G:[^ :]+]]:3 = hla.prefix_vjp #{{.*}}(%[[Q]], %[[KR]], %[[VR]]) cotangent(%[[DO]])
// CHECK:         %[[DKS:.+]] = tensor.expand_shape %[[G]]#1 {{\[}}[0], [1], [2, 3], [4]] output_shape [1, 8, 2, 2, 4] : tensor<1x8x4x4xbf16> into tensor<1x8x2x2x4xbf16>
// CHECK:         %[[DKF:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[DKS]] : tensor<1x8x2x2x4xbf16>) outs(%{{.*}} : tensor<1x8x2x4xf32>)
// CHECK:           arith.extf
// CHECK:           arith.addf
// CHECK:         %[[DK:.+]] = linalg.generic {{.*}} ins(%[[DKF]] : tensor<1x8x2x4xf32>) outs(%{{.*}} : tensor<1x8x2x4xbf16>)
// CHECK:           arith.truncf
// CHECK:         %[[DVS:.+]] = tensor.expand_shape %[[G]]#2
// CHECK:         %[[DVF:.+]] = linalg.generic {{.*}} ins(%[[DVS]] : tensor<1x8x2x2x3xbf16>) outs(%{{.*}} : tensor<1x8x2x3xf32>)
// CHECK:         %[[DV:.+]] = linalg.generic {{.*}} ins(%[[DVF]] : tensor<1x8x2x3xf32>) outs(%{{.*}} : tensor<1x8x2x3xbf16>)
// CHECK:         return %[[G]]#0, %[[DK]], %[[DV]] : tensor<1x8x4x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x3xbf16>
func.func @main(%q: tensor<1x8x4x4xbf16>, %k: tensor<1x8x2x4xbf16>, %v: tensor<1x8x2x3xbf16>) -> tensor<1x8x4x3xbf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x8x4x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x3xbf16>) -> tensor<1x8x4x3xbf16>
  return %o : tensor<1x8x4x3xbf16>
}
