// RUN: hla-opt %s --hla-lower-scans=schedule=sequential | FileCheck %s

// Tests that the sequential schedule folds the scan's elements in order with
// one carry of the carried components (P only: ρ is read from B alone),
// storing the carry before each combine (exclusive) and returning the last
// carry as the final state.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.5)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @exclusive
// CHECK-SAME: (%[[P:.+]]: tensor<1x5x2x4x3xf32>, %[[RHO:.+]]: tensor<1x5x2xf32>)
// CHECK: %[[ZERO:.+]] = linalg.fill {{.*}} -> tensor<1x2x4x3xf32>
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[CARRY:.+]] = %[[ZERO]], %[[PREFIX:.+]] = %{{.+}})
// CHECK:   %[[SEG:.+]] = tensor.extract_slice %[[P]][0, %[[I]], 0, 0, 0] [1, 1, 2, 4, 3]
// CHECK:   %[[SEGRHO:.+]] = tensor.extract_slice %[[RHO]][0, %[[I]], 0] [1, 1, 2]
// CHECK:   %[[NEXT:.+]]:2 = hla.combine #{{.+}}(%[[CARRY]], %{{.+}}), (%[[SEG]], %[[SEGRHO]])
// CHECK:   %[[STORED:.+]] = tensor.insert_slice %[[CARRY]] into %[[PREFIX]][0, %[[I]], 0, 0, 0]
// CHECK:   scf.yield %[[NEXT]]#0, %[[STORED]]
// CHECK: return %[[LOOP]]#1, %[[LOOP]]#0
func.func @exclusive(%p: tensor<1x5x2x4x3xf32>, %rho: tensor<1x5x2xf32>) -> (tensor<1x5x2x4x3xf32>, tensor<1x2x4x3xf32>) {
  %s, %f = hla.scan exclusive #la(%p, %rho) : (tensor<1x5x2x4x3xf32>, tensor<1x5x2xf32>) -> (tensor<1x5x2x4x3xf32>, tensor<1x2x4x3xf32>)
  return %s, %f : tensor<1x5x2x4x3xf32>, tensor<1x2x4x3xf32>
}

// An inclusive scan from an initial state stores the carry after combining.
// CHECK-LABEL: func.func @inclusive_init
// CHECK-SAME: %[[INIT:[^:]+]]: tensor<1x2x4x3xf32>)
// CHECK: scf.for {{.*}} iter_args(%[[CARRY:.+]] = %[[INIT]], %{{.+}} = %{{.+}})
// CHECK:   %[[NEXT:.+]]:2 = hla.combine
// CHECK:   tensor.insert_slice %[[NEXT]]#0 into
func.func @inclusive_init(%p: tensor<1x5x2x4x3xf32>, %rho: tensor<1x5x2xf32>, %init: tensor<1x2x4x3xf32>) -> tensor<1x5x2x4x3xf32> {
  %s = hla.scan #la(%p, %rho) init(%init) : (tensor<1x5x2x4x3xf32>, tensor<1x5x2xf32>, tensor<1x2x4x3xf32>) -> tensor<1x5x2x4x3xf32>
  return %s : tensor<1x5x2x4x3xf32>
}
