// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=2 form=segmented segments=3" | FileCheck %s

// Tests hla-chunk's segmented form: 10 tokens in chunks of 2 are 5 chunks,
// cut into 3 runs of at most 2 chunks. A first scf.forall over (batch,
// segment, head) folds each run's chunks into its summary from the
// identity; a second one combines the initial state with the summaries of
// the runs before its own and runs the carried chunk loop over its run,
// writing its rows and its state; a third copies out the last run's state
// as the final state.

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x10x2x4xf32>, %[[K:[^:]+]]: tensor<1x10x2x4xf32>, %[[V:[^:]+]]: tensor<1x10x2x3xf32>, %[[P0:[^:]+]]: tensor<1x2x4x3xf32>)
// CHECK: %[[SUMS:.+]] = scf.forall (%[[B:.+]], %[[S:.+]], %[[H:.+]]) in (1, 3, 2) shared_outs(%[[SO:.+]] = %{{.+}}) -> (tensor<1x3x2x4x3xf32>)
// CHECK:   %[[LO:.+]] = arith.muli %[[S]], %[[TWO:.+]] : index
// CHECK:   %[[END:.+]] = arith.minsi %{{.+}}, %{{.+}} : index
// CHECK:   %[[ZERO:.+]] = linalg.fill
// CHECK:   %[[SUM:.+]] = scf.for %{{.+}} = %[[LO]] to %[[END]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[ZERO]])
// CHECK-NOT: tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0] [%{{.+}}, 3]
// CHECK:     hla.combine #{{.+}}(%[[ACC]]), (%{{.+}})
// CHECK:   tensor.parallel_insert_slice %[[SUM]] into %[[SO]][%[[B]], %[[S]], %[[H]], 0, 0] [1, 1, 1, 4, 3]
// CHECK: %[[RES:.+]]:2 = scf.forall (%[[B2:.+]], %[[S2:.+]], %[[H2:.+]]) in (1, 3, 2) shared_outs(%[[O:.+]] = %{{.+}}, %[[STATES:.+]] = %{{.+}}) -> (tensor<1x10x2x3xf32>, tensor<1x3x2x4x3xf32>)
// CHECK:   %[[INIT:.+]] = tensor.extract_slice %[[P0]][%[[B2]], %[[H2]], 0, 0] [1, 1, 4, 3]
// CHECK:   %[[BEFORE:.+]] = scf.for %[[R:.+]] = %{{.+}} to %[[S2]] step %{{.+}} iter_args(%[[P:.+]] = %[[INIT]])
// CHECK:     %[[PREV:.+]] = tensor.extract_slice %[[SUMS]][%[[B2]], %[[R]], %[[H2]], 0, 0] [1, 1, 1, 4, 3]
// CHECK:     hla.combine #{{.+}}(%[[P]]), (%[[PREV]])
// CHECK:   %[[LOOP:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[BEFORE]], %{{.+}} = %{{.+}})
// CHECK:   tensor.parallel_insert_slice %[[LOOP]]#1 into %[[O]][%[[B2]], %{{.+}}, %[[H2]], 0]
// CHECK:   tensor.parallel_insert_slice %[[LOOP]]#0 into %[[STATES]][%[[B2]], %[[S2]], %[[H2]], 0, 0]
// CHECK: %[[FINAL:.+]] = scf.forall (%[[B3:.+]], %[[H3:.+]]) in (1, 2) shared_outs(%[[F:.+]] = %{{.+}}) -> (tensor<1x2x4x3xf32>)
// CHECK:   %[[LAST:.+]] = tensor.extract_slice %[[RES]]#1[%[[B3]], 2, %[[H3]], 0, 0] [1, 1, 1, 4, 3]
// CHECK:   tensor.parallel_insert_slice %[[LAST]] into %[[F]][%[[B3]], %[[H3]], 0, 0]
// CHECK: return %[[RES]]#0, %[[FINAL]]
// CHECK-NOT: hla.scan
func.func @linear(%q: tensor<1x10x2x4xf32>, %k: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>, %p0: tensor<1x2x4x3xf32>) -> (tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>) {
  %o, %p = hla.linear_attention %q, %k, %v initial_state(%p0) {scale = 1.0 : f64} : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>) -> (tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>)
  return %o, %p : tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>
}
