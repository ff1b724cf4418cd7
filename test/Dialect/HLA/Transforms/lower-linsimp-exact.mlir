// RUN: hla-opt %s --hla-expand --hla-lower-linsimp-exact="chunk-size=8" | FileCheck %s

// Tests hla-lower-linsimp-exact on LinSimp with kernel = exact (no finite state): one
// scf.forall over (batch, query chunk, head); per anchor offset w (W = 4)
// a loop over the key chunks up to the query chunk (n + 1 of them), each
// scoring the chunk's keys against τ (q ⊙ r), keeping the running maximum
// and the rescaled sums of the query's softmax over its (key, anchor)
// pairs; the rows are num / den.

// CHECK-LABEL: func.func @exact
// CHECK: scf.forall (%{{.+}}, %[[N:.+]], %{{.+}}) in (1, 4, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x32x2x8xf32>)
// CHECK:   scf.for %[[W:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:     %[[KEYS:.+]] = arith.addi %[[N]], %{{.+}} : index
// CHECK:     scf.for %{{.+}} = %{{.+}} to %[[KEYS]] step %{{.+}} iter_args({{.*}}) -> (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:       arith.maximumf
// CHECK:       math.exp
// CHECK:       linalg.copy
// CHECK:   arith.divf
// CHECK:   tensor.parallel_insert_slice
// CHECK-NOT: hla.linsimp
func.func @exact(%q: tensor<1x32x2x8xf32>, %omega: tensor<64x8xf32>) -> tensor<1x32x2x8xf32> {
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega {kernel = #hla.kernel<exact>, window = 4 : i64} : (tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<64x8xf32>) -> tensor<1x32x2x8xf32>
  return %o : tensor<1x32x2x8xf32>
}
