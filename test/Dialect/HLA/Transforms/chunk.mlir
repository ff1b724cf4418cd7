// RUN: hla-opt %s --hla-expand --hla-chunk=chunk-size=4 | FileCheck %s

// Tests that hla-chunk turns segment -> scan -> readout into chunk
// summaries, an exclusive scan over the chunks, and chunk readouts: 10
// tokens make 3 chunks (the last one 2 tokens long), and the chunk math of
// first-order linear attention is ΔP = Kᵀ V and O = Q P₀ + ((Q Kᵀ) ⊙ L) V.

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x10x2x4xf32>, %[[K:[^:]+]]: tensor<1x10x2x4xf32>, %[[V:[^:]+]]: tensor<1x10x2x3xf32>)
// Phase 1: one summary P per (batch, chunk, head), from the chunk's k and v.
// CHECK: %[[SUMS:.+]] = scf.forall (%[[B:.+]], %[[N:.+]], %[[H:.+]]) in (1, 3, 2) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<1x3x2x4x3xf32>)
// CHECK:   %[[START:.+]] = arith.muli %[[N]], %{{.+}} : index
// CHECK:   %[[LEN:.+]] = arith.minsi
// CHECK:   tensor.extract_slice %[[K]][%[[B]], %[[START]], %[[H]], 0] [1, %[[LEN]], 1, 4]
// CHECK:   tensor.extract_slice %[[V]][%[[B]], %[[START]], %[[H]], 0] [1, %[[LEN]], 1, 3]
// CHECK:   tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[B]], %[[N]], %[[H]], 0, 0] [1, 1, 1, 4, 3]
// Phase 2: the state carried into each chunk.
// CHECK: %[[CARRY:.+]] = hla.scan exclusive #{{.+}}(%[[SUMS]]) : (tensor<1x3x2x4x3xf32>) -> tensor<1x3x2x4x3xf32>
// Phase 3: every readout of the chunk, written back for the valid rows.
// CHECK: scf.forall (%[[B3:.+]], %[[N3:.+]], %[[H3:.+]]) in (1, 3, 2) shared_outs(%[[O:.+]] = %{{.+}}) -> (tensor<1x10x2x3xf32>)
// CHECK:   tensor.extract_slice %[[CARRY]][%[[B3]], %[[N3]], %[[H3]], 0, 0] [1, 1, 1, 4, 3]
// CHECK:   tensor.parallel_insert_slice %{{.+}} into %[[O]][%[[B3]], %{{.+}}, %[[H3]], 0] [1, %{{.+}}, 1, 3]
// CHECK-NOT: hla.segment
// CHECK-NOT: hla.readout
func.func @linear(%q: tensor<1x10x2x4xf32>, %k: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>) -> tensor<1x10x2x3xf32> {
  %o = hla.linear_attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>) -> tensor<1x10x2x3xf32>
  return %o : tensor<1x10x2x3xf32>
}
