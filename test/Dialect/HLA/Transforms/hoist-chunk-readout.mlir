// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=8 form=fused causal-isolation=false anchor-rows=8" --convert-hla-to-linalg "--hla-hoist-chunk-work=report" 2>&1 | FileCheck %s

// Tests hla-hoist-chunk-work's second split on LinSimp (chunk 8, W = 4,
// one anchor offset per pass: four passes of its window per chunk): the
// fused loop's rows run far more reductions than its state (M, a), so the
// loop keeps the state and stacks it per chunk ([.., chunks · m, dv] and
// [.., chunks, m]) and a forall over (head, chunk) after it computes each
// chunk's rows, reading the chunk's stacked state, writing its rows into
// the output.

// CHECK: remark: hla-hoist-chunk-work: output rows ({{[0-9]+}} reductions a chunk) moved to a pass parallel over chunks after the loop, the state's {{[0-9]+}} staying; 2 states stacked
// CHECK-LABEL: func.func @rows
// CHECK: %[[SEQ:.+]]:2 = scf.forall (%[[B:.+]], %[[H:.+]]) in (1, 2) shared_outs(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<1x2x48x4xf32>, tensor<1x2x3x16xf32>)
// CHECK:   scf.for %[[C:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<16x4xf32>, tensor<16xf32>, tensor<48x4xf32>, tensor<3x16xf32>)
// CHECK:     tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0] [16, 4] [1, 1] : tensor<16x4xf32> into tensor<48x4xf32>
// CHECK:     tensor.insert_slice %{{.+}} into %{{.+}}[%[[C]], 0] [1, 16] [1, 1] : tensor<16xf32> into tensor<3x16xf32>
// CHECK-NOT:   scf.for
// CHECK:   scf.forall.in_parallel
// CHECK: %[[ROWS:.+]] = scf.forall (%[[B2:.+]], %[[H2:.+]], %[[C2:.+]]) in (1, 2, 3) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<1x20x2x4xbf16>)
// CHECK:   tensor.extract_slice %[[SEQ]]#0[%[[B2]], %[[H2]], %{{.+}}, 0] [1, 1, 16, 4] [1, 1, 1, 1] : tensor<1x2x48x4xf32> to tensor<16x4xf32>
// CHECK:   tensor.extract_slice %[[SEQ]]#1[%[[B2]], %[[H2]], %[[C2]], 0] [1, 1, 1, 16] [1, 1, 1, 1] : tensor<1x2x3x16xf32> to tensor<16xf32>
// CHECK:   scf.for
// CHECK:     math.exp
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[B2]], %{{.+}}, %[[H2]], 0] [1, %{{.+}}, 1, 4] [1, 1, 1, 1] : tensor<?x4xbf16> into tensor<1x20x2x4xbf16>
// CHECK: return %[[ROWS]]
func.func @rows(%q: tensor<1x20x2x8xbf16>, %k: tensor<1x20x2x8xbf16>, %v: tensor<1x20x2x4xbf16>, %r: tensor<1x20x2x8xbf16>, %u: tensor<1x20x2x4xbf16>, %omega: tensor<16x8xbf16>) -> tensor<1x20x2x4xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 4 : i64} : (tensor<1x20x2x8xbf16>, tensor<1x20x2x8xbf16>, tensor<1x20x2x4xbf16>, tensor<1x20x2x8xbf16>, tensor<1x20x2x4xbf16>, tensor<16x8xbf16>) -> tensor<1x20x2x4xbf16>
  return %o : tensor<1x20x2x4xbf16>
}
