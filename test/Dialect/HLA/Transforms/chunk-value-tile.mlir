// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=4 form=fused value-tile=2" | FileCheck %s

// Tests hla-chunk's value tiles: linear attention with dv = 6 cut into three
// tiles of 2 columns. The fused loop runs over (sequence, head, value tile);
// each iteration reads its 2 columns of v and of the initial state, carries
// a [d, 2] state and writes its columns of the output and the final state.

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x10x2x4xf32>, %[[K:[^:]+]]: tensor<1x10x2x4xf32>, %[[V:[^:]+]]: tensor<1x10x2x6xf32>, %[[P0:[^:]+]]: tensor<1x2x4x6xf32>)
// CHECK: scf.forall (%[[S:.+]], %[[H:.+]], %[[J:.+]]) in (1, 2, 3) shared_outs(%[[O:.+]] = %{{.+}}, %[[FIN:.+]] = %{{.+}}) -> (tensor<1x10x2x6xf32>, tensor<1x2x4x6xf32>)
// CHECK:   %[[COL:.+]] = arith.muli %[[J]], %[[C2:.+]] : index
// CHECK:   tensor.extract_slice %[[O]][%[[S]], %{{.+}}, %[[H]], %[[COL]]] [1, %{{.+}}, 1, 2]
// CHECK:   tensor.extract_slice %[[P0]][%[[S]], %[[H]], 0, %[[COL]]] [1, 1, 4, 2] {{.+}} to tensor<4x2xf32>
// CHECK:   scf.for {{.+}} -> (tensor<4x2xf32>, tensor<?x2xf32>)
// CHECK:     tensor.extract_slice %[[V]][%[[S]], %{{.+}}, %[[H]], %[[COL]]] [1, %{{.+}}, 1, 2]
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.+}} into %[[O]][%[[S]], %{{.+}}, %[[H]], %[[COL]]] [1, %{{.+}}, 1, 2]
// CHECK:     tensor.parallel_insert_slice %{{.+}} into %[[FIN]][%[[S]], %[[H]], 0, %[[COL]]] [1, 1, 4, 2]
func.func @linear(%q: tensor<1x10x2x4xf32>, %k: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x6xf32>, %p0: tensor<1x2x4x6xf32>) -> (tensor<1x10x2x6xf32>, tensor<1x2x4x6xf32>) {
  %o, %p = hla.linear_attention %q, %k, %v initial_state(%p0) {scale = 1.0 : f64} : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x6xf32>, tensor<1x2x4x6xf32>) -> (tensor<1x10x2x6xf32>, tensor<1x2x4x6xf32>)
  return %o, %p : tensor<1x10x2x6xf32>, tensor<1x2x4x6xf32>
}
