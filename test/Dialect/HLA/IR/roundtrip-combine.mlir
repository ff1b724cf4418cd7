// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.combine round-trips with several components.

#hla2 = #hla.monoid<"hla2" inputs(q: [d], k: [d], v: [dv])
  state(S: [d, d], C: [d, dv], G: [d, dv])
  token(S = k * k.T, C = q * v.T)
  combine(S = S.a + S.b, C = C.a + C.b, G = G.a + G.b + S.b * C.a)
  readout(num = q.T * S * C - q.T * G)>

// CHECK-LABEL: func.func @combine
// CHECK-SAME: (%[[SA:[^:]+]]: tensor<3x4x4xf32>, %[[CA:[^:]+]]: tensor<3x4x2xf32>, %[[GA:[^:]+]]: tensor<3x4x2xf32>, %[[SB:[^:]+]]: tensor<3x4x4xf32>, %[[CB:[^:]+]]: tensor<3x4x2xf32>, %[[GB:[^:]+]]: tensor<3x4x2xf32>)
// CHECK: hla.combine #{{.+}}(%[[SA]], %[[CA]], %[[GA]]), (%[[SB]], %[[CB]], %[[GB]])
func.func @combine(%sa: tensor<3x4x4xf32>, %ca: tensor<3x4x2xf32>, %ga: tensor<3x4x2xf32>,
                   %sb: tensor<3x4x4xf32>, %cb: tensor<3x4x2xf32>, %gb: tensor<3x4x2xf32>) -> tensor<3x4x2xf32> {
  %s, %c, %g = hla.combine #hla2(%sa, %ca, %ga), (%sb, %cb, %gb) : (tensor<3x4x4xf32>, tensor<3x4x2xf32>, tensor<3x4x2xf32>, tensor<3x4x4xf32>, tensor<3x4x2xf32>, tensor<3x4x2xf32>) -> (tensor<3x4x4xf32>, tensor<3x4x2xf32>, tensor<3x4x2xf32>)
  return %g : tensor<3x4x2xf32>
}

// A single pair of states: no leading dimensions at all.
// CHECK-LABEL: func.func @combine_unbatched
// CHECK: hla.combine #{{.+}}(%{{.+}}, %{{.+}}, %{{.+}}), (%{{.+}}, %{{.+}}, %{{.+}}) : (tensor<4x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>)
func.func @combine_unbatched(%sa: tensor<4x4xf32>, %ca: tensor<4x2xf32>, %ga: tensor<4x2xf32>,
                             %sb: tensor<4x4xf32>, %cb: tensor<4x2xf32>, %gb: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %s, %c, %g = hla.combine #hla2(%sa, %ca, %ga), (%sb, %cb, %gb) : (tensor<4x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> (tensor<4x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>)
  return %g : tensor<4x2xf32>
}
