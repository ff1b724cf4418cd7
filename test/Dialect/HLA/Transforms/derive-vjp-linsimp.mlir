// RUN: hla-opt %s --hla-derive-vjp | FileCheck %s

// Tests that LinSimp (favor kernel) is differentiated as an hla.anchor_vjp:
// @main(q, k, v, r, u, omega, M, a, ar, au, av) -> (o, states) becomes
// @main(..., do, dM, da, dar, dau, dav) -> (dq, dk, dv, dr, du, domega,
// dM0, da0, dar0, dau0, dav0). The grouped K/V-side operands (k, v, r, u on
// two of four query heads) are repeated to the query heads and their
// gradients summed over each group; q's, Ω's and the state's are the op's
// own. τ is the op's scale.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<1x8x4x4xf32>, %[[K:[^:]+]]: tensor<1x8x2x4xf32>, %[[V:[^:]+]]: tensor<1x8x2x3xf32>, %[[R:[^:]+]]: tensor<1x8x2x4xf32>, %[[U:[^:]+]]: tensor<1x8x2x3xf32>, %[[OM:[^:]+]]: tensor<16x4xf32>, %[[M0:[^:]+]]: tensor<1x4x16x3xf32>, %[[A0:[^:]+]]: tensor<1x4x16xf32>, %[[AR:[^:]+]]: tensor<1x4x2x4xf32>, %[[AU:[^:]+]]: tensor<1x4x2x3xf32>, %[[AV:[^:]+]]: tensor<1x4x2xf32>, %[[DO:[^:]+]]: tensor<1x8x4x3xf32>, %[[DM:[^:]+]]: tensor<1x4x16x3xf32>, %[[DA:[^:]+]]: tensor<1x4x16xf32>, %[[DAR:[^:]+]]: tensor<1x4x2x4xf32>, %[[DAU:[^:]+]]: tensor<1x4x2x3xf32>, %[[DAV:[^:]+]]: tensor<1x4x2xf32>)
// CHECK-SAME:    -> (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x4x16x3xf32>, tensor<1x4x16xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x3xf32>, tensor<1x4x2xf32>)
// CHECK:         %[[KR:.+]] = tensor.collapse_shape %{{.+}} : tensor<1x8x2x2x4xf32> into tensor<1x8x4x4xf32>
// CHECK:         %[[VR:.+]] = tensor.collapse_shape %{{.+}} : tensor<1x8x2x2x3xf32> into tensor<1x8x4x3xf32>
// CHECK:         %[[RR:.+]] = tensor.collapse_shape %{{.+}} : tensor<1x8x2x2x4xf32> into tensor<1x8x4x4xf32>
// CHECK:         %[[UR:.+]] = tensor.collapse_shape %{{.+}} : tensor<1x8x2x2x3xf32> into tensor<1x8x4x3xf32>
// CHECK:         %[[G:[^ :]+]]:11 = hla.anchor_vjp #{{.*}}(%[[Q]], %[[KR]], %[[VR]], %[[RR]], %[[UR]]) omega(%[[OM]]) init(%[[M0]], %[[A0]], %[[AR]], %[[AU]], %[[AV]]) cotangent(%[[DO]]) final_cotangent(%[[DM]], %[[DA]], %[[DAR]], %[[DAU]], %[[DAV]]) {scale = 2.500000e-01 : f64, window = 3 : i64}
// CHECK:         tensor.expand_shape %[[G]]#1
// CHECK:         %[[DK:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
// CHECK:         tensor.expand_shape %[[G]]#2
// CHECK:         %[[DV:.+]] = linalg.generic
// CHECK:         tensor.expand_shape %[[G]]#3
// CHECK:         %[[DR:.+]] = linalg.generic
// CHECK:         tensor.expand_shape %[[G]]#4
// CHECK:         %[[DU:.+]] = linalg.generic
// CHECK:         return %[[G]]#0, %[[DK]], %[[DV]], %[[DR]], %[[DU]], %[[G]]#5, %[[G]]#6, %[[G]]#7, %[[G]]#8, %[[G]]#9, %[[G]]#10
func.func @main(%q: tensor<1x8x4x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %r: tensor<1x8x2x4xf32>, %u: tensor<1x8x2x3xf32>, %omega: tensor<16x4xf32>,
                %m0: tensor<1x4x16x3xf32>, %a0: tensor<1x4x16xf32>, %ar: tensor<1x4x2x4xf32>, %au: tensor<1x4x2x3xf32>, %av: tensor<1x4x2xf32>) -> (tensor<1x8x4x3xf32>, tensor<1x4x16x3xf32>, tensor<1x4x16xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x3xf32>, tensor<1x4x2xf32>) {
  %o:6 = hla.linsimp %q, %k, %v, %r, %u, %omega initial_state(%m0, %a0, %ar, %au, %av) {window = 3 : i64, scale = 0.25 : f64} : (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x4x16x3xf32>, tensor<1x4x16xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x3xf32>, tensor<1x4x2xf32>) -> (tensor<1x8x4x3xf32>, tensor<1x4x16x3xf32>, tensor<1x4x16xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x3xf32>, tensor<1x4x2xf32>)
  return %o#0, %o#1, %o#2, %o#3, %o#4, %o#5 : tensor<1x8x4x3xf32>, tensor<1x4x16x3xf32>, tensor<1x4x16xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x3xf32>, tensor<1x4x2xf32>
}
