// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=4 form=fused" | FileCheck %s

// Tests hla-chunk's fused form: one scf.forall over (sequence, head) whose
// body loops over the sequence's 3 chunks (10 tokens, the last chunk 2 long),
// reading out each chunk with the carried state, then combining the chunk's
// summary into the state, which is copied into the carried buffer; the final
// state is written per (sequence, head).

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x10x2x4xf32>, %[[K:[^:]+]]: tensor<1x10x2x4xf32>, %[[V:[^:]+]]: tensor<1x10x2x3xf32>, %[[P0:[^:]+]]: tensor<1x2x4x3xf32>)
// CHECK: %[[RES:.+]]:2 = scf.forall (%[[S:.+]], %[[H:.+]]) in (1, 2) shared_outs(%[[O:.+]] = %{{.+}}, %[[FIN:.+]] = %{{.+}}) -> (tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>)
// CHECK:   %[[ROWS:.+]] = tensor.extract_slice %[[O]][%[[S]], %{{.+}}, %[[H]], 0] [1, %{{.+}}, 1, 3]
// CHECK:   %[[INIT:.+]] = tensor.extract_slice %[[P0]][%[[S]], %[[H]], 0, 0] [1, 1, 4, 3]
// CHECK:   %[[LOOP:.+]]:2 = scf.for %[[N:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[P:.+]] = %[[INIT]], %[[ACC:.+]] = %[[ROWS]])
// CHECK:     %[[START:.+]] = arith.muli %[[N]], %{{.+}} : index
// CHECK:     tensor.extract_slice %[[Q]][%[[S]], %[[START]], %[[H]], 0]
// CHECK:     %[[WRITTEN:.+]] = tensor.insert_slice %{{.+}} into %[[ACC]]
// CHECK:     %[[NEXT:.+]] = hla.combine #{{.+}}(%[[P]]), (%{{.+}})
// CHECK:     %[[COPY:.+]] = linalg.copy ins(%[[NEXT]] : tensor<4x3xf32>) outs(%[[P]] : tensor<4x3xf32>)
// CHECK:     scf.yield %[[COPY]], %[[WRITTEN]]
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %[[LOOP]]#1 into %[[O]][%[[S]], %{{.+}}, %[[H]], 0]
// CHECK:     tensor.parallel_insert_slice %[[LOOP]]#0 into %[[FIN]][%[[S]], %[[H]], 0, 0] [1, 1, 4, 3]
// CHECK: return %[[RES]]#0, %[[RES]]#1
// CHECK-NOT: hla.scan
func.func @linear(%q: tensor<1x10x2x4xf32>, %k: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>, %p0: tensor<1x2x4x3xf32>) -> (tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>) {
  %o, %p = hla.linear_attention %q, %k, %v initial_state(%p0) {scale = 1.0 : f64} : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>) -> (tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>)
  return %o, %p : tensor<1x10x2x3xf32>, tensor<1x2x4x3xf32>
}
