// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=4 form=fused" | FileCheck %s

// Tests hla-chunk on KDA's gated delta rule (WY/UT form, SEMANTICS.md §6):
// per chunk the state S is read out and then advanced by the chunk's affine
// map, both computed from the in-chunk cumulative log-decay Γ and the
// triangular solve T = (I + L)^-1 diag(β), a loop over the chunk's rows
// that reads β_r and writes row r of T.

// CHECK-LABEL: func.func @kda
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x8x2x6xf32>)
// CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x6xf32>, tensor<?x6xf32>)
// CHECK:     %[[BETA:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0] [%{{.+}}] [1] : tensor<?xf32> into tensor<4xf32>
// CHECK:     %[[T:.+]] = scf.for %[[ROW:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<4x4xf32>)
// CHECK:       tensor.extract %[[BETA]][%[[ROW]]] : tensor<4xf32>
// CHECK:       tensor.insert_slice %{{.+}} into %[[ACC]][%[[ROW]], 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<4x4xf32>
// CHECK:     hla.combine #{{.+}}(%{{.+}}, %[[S]]), (%{{.+}}, %{{.+}}) : (tensor<4x4xf32>, tensor<4x6xf32>, tensor<4x4xf32>, tensor<4x6xf32>)
// CHECK-NOT: hla.scan
func.func @kda(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<1x8x2x4xf32>, %beta: tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.25 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
