// RUN: hla-opt %s --convert-hla-to-linalg | FileCheck %s

// Tests that convert-hla-to-linalg evaluates combine rules as batched
// contractions: for G = ρ_B² G_A + G_B + ρ_B S_B C_A over a batch of 3, the
// scalar decays broadcast over the batch, S_B C_A is a batched matrix
// product with its reduction over S's columns, and the terms are added.
// Only the result that is read (G) is computed.

#m = #hla.monoid<"m" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.5)
  state(S: [d, d], C: [d, dv], G: [d, dv], rho: [] eye)
  token(S = k * k.T, C = q * v.T, rho = gamma)
  combine(S = rho.b * S.a + S.b, C = rho.b * C.a + C.b,
          G = rho.b * rho.b * G.a + G.b + rho.b * S.b * C.a, rho = rho.a * rho.b)
  readout(num = q.T * S * C - q.T * G)>

// CHECK-DAG: #[[$SCALAR:.+]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$A:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$B:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// CHECK-LABEL: func.func @g_only
// CHECK-SAME: (%[[SA:[^:]+]]: {{[^,]+}}, %[[CA:[^:]+]]: {{[^,]+}}, %[[GA:[^:]+]]: {{[^,]+}}, %[[RA:[^:]+]]: {{[^,]+}}, %[[SB:[^:]+]]: {{[^,]+}}, %[[CB:[^:]+]]: {{[^,]+}}, %[[GB:[^:]+]]: {{[^,]+}}, %[[RB:[^:]+]]: {{[^)]+}})
// ρ_B · ρ_B on scalars of the batch:
// CHECK: linalg.generic {indexing_maps = [#[[$SCALAR]], #[[$SCALAR]], #[[$SCALAR]]], {{.*}} ins(%[[RB]], %[[RB]] : tensor<3xf32>, tensor<3xf32>)
// S_B · C_A, reducing over the inner dimension:
// CHECK: linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}}, %[[CA]] : tensor<3x4x4xf32>, tensor<3x4x2xf32>)
// CHECK: arith.addf
// CHECK-NOT: hla.combine
func.func @g_only(%sa: tensor<3x4x4xf32>, %ca: tensor<3x4x2xf32>, %ga: tensor<3x4x2xf32>, %ra: tensor<3xf32>,
                  %sb: tensor<3x4x4xf32>, %cb: tensor<3x4x2xf32>, %gb: tensor<3x4x2xf32>, %rb: tensor<3xf32>) -> tensor<3x4x2xf32> {
  %r:4 = hla.combine #m(%sa, %ca, %ga, %ra), (%sb, %cb, %gb, %rb) : (tensor<3x4x4xf32>, tensor<3x4x2xf32>, tensor<3x4x2xf32>, tensor<3xf32>, tensor<3x4x4xf32>, tensor<3x4x2xf32>, tensor<3x4x2xf32>, tensor<3xf32>) -> (tensor<3x4x4xf32>, tensor<3x4x2xf32>, tensor<3x4x2xf32>, tensor<3xf32>)
  return %r#2 : tensor<3x4x2xf32>
}
