// RUN: hla-opt %s --convert-hla-to-linalg | FileCheck %s

// Tests that hla.feature_map becomes the projections Ω x (a reduction over
// d, reading bf16 inputs as f32), the squared norms (a reduction over d) and
// m^-1/2 exp(√s Ωx − s‖x‖²/2): with s = 0.25 and m = 16, √s = 0.5,
// s/2 = 0.125 and m^-1/2 = 0.25.

// CHECK-DAG: #[[$X:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[$OM:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
// CHECK-DAG: #[[$P:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @features
// CHECK-SAME: (%[[K:[^:]+]]: tensor<1x8x2x4xbf16>, %[[OMEGA:[^:]+]]: tensor<16x4xbf16>)
// CHECK: %[[PROJ:.+]] = linalg.generic {indexing_maps = [#[[$X]], #[[$OM]], #[[$P]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[K]], %[[OMEGA]] : tensor<1x8x2x4xbf16>, tensor<16x4xbf16>)
// CHECK:   arith.extf
// CHECK: %[[SQ:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[K]] : tensor<1x8x2x4xbf16>) outs(%{{.+}} : tensor<1x8x2xf32>)
// CHECK: %[[PHI:.+]] = linalg.generic {{.*}} ins(%[[PROJ]], %[[SQ]] : tensor<1x8x2x16xf32>, tensor<1x8x2xf32>)
// CHECK:   arith.constant 5.000000e-01 : f32
// CHECK:   arith.constant 1.250000e-01 : f32
// CHECK:   math.exp
// CHECK:   arith.constant 2.500000e-01 : f32
// CHECK: return %[[PHI]]
func.func @features(%k: tensor<1x8x2x4xbf16>, %omega: tensor<16x4xbf16>) -> tensor<1x8x2x16xf32> {
  %phi = hla.feature_map %k, %omega {scale = 0.25 : f64} : (tensor<1x8x2x4xbf16>, tensor<16x4xbf16>) -> tensor<1x8x2x16xf32>
  return %phi : tensor<1x8x2x16xf32>
}
