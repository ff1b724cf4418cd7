// RUN: hla-opt %s --hla-lower-scans=schedule=blelloch | FileCheck %s

// Tests the Blelloch schedule on 5 elements: they are padded with identities
// to 8; the up-sweep has three levels of 4, 2 and 1 parallel combines on
// the full segments; the down-sweep has three levels, each a forall writing
// the right slots (prefix ∘ left summary) and one copying prefixes to the
// left slots; the final state is the initial state combined with the total.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.5)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @exclusive
// CHECK: %[[PADDED:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 0, 0] [1, 5, 2, 4, 3] {{.*}} into tensor<1x8x2x4x3xf32>
// CHECK: %[[UP1:.+]]:2 = scf.forall (%{{.+}}) in (4) shared_outs(%{{.+}} = %[[PADDED]], %{{.+}} = %{{.+}})
// CHECK:   hla.combine
// CHECK: %[[UP2:.+]]:2 = scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}} = %[[UP1]]#0, %{{.+}} = %[[UP1]]#1)
// CHECK: %[[UP3:.+]]:2 = scf.forall (%{{.+}}) in (1) shared_outs(%{{.+}} = %[[UP2]]#0, %{{.+}} = %[[UP2]]#1)
// CHECK: scf.forall (%{{.+}}) in (1)
// CHECK:   hla.combine
// CHECK: scf.forall (%{{.+}}) in (1)
// CHECK: scf.forall (%{{.+}}) in (2)
// CHECK: scf.forall (%{{.+}}) in (2)
// CHECK: scf.forall (%{{.+}}) in (4)
// CHECK: %[[LAST:.+]] = scf.forall (%{{.+}}) in (4)
// CHECK: %[[PREFIX:.+]] = tensor.extract_slice %[[LAST]][0, 0, 0, 0, 0] [1, 5, 2, 4, 3]
// CHECK: %[[TOTAL:.+]] = tensor.extract_slice %[[UP3]]#0[0, 7, 0, 0, 0]
// CHECK: %[[FINAL:.+]]:2 = hla.combine #{{.+}}(%{{.+}}, %{{.+}}), (%[[TOTAL]], %{{.+}})
// CHECK: return %[[PREFIX]], %[[FINAL]]#0
func.func @exclusive(%p: tensor<1x5x2x4x3xf32>, %rho: tensor<1x5x2xf32>) -> (tensor<1x5x2x4x3xf32>, tensor<1x2x4x3xf32>) {
  %s, %f = hla.scan exclusive #la(%p, %rho) : (tensor<1x5x2x4x3xf32>, tensor<1x5x2xf32>) -> (tensor<1x5x2x4x3xf32>, tensor<1x2x4x3xf32>)
  return %s, %f : tensor<1x5x2x4x3xf32>, tensor<1x2x4x3xf32>
}
