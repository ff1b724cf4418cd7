// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=4 form=fused" | FileCheck %s

// Tests hla-chunk on KDA's gated delta rule (WY/UT form, SEMANTICS.md §6):
// per chunk the state S is read out and then advanced, both computed from the in-chunk cumulative log-decay Γ and the
// triangular solve T = (I + L)^-1 diag(β). The inverse is built by doubling
// its diagonal blocks (no loop over the chunk's rows): from the identity,
// log₂ 4 = 2 levels, each masking L to the lower-left half-block of every
// block of 2, then 4 rows (divui/remui by 2, then 4), taking N − N L' N (two
// products and a subtraction); then T's columns are scaled by β.

// CHECK-LABEL: func.func @kda
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x8x2x6xf32>)
// CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x6xf32>, tensor<?x6xf32>)
// CHECK:     %[[BETA:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0] [%{{.+}}] [1] : tensor<?xf32> into tensor<4xf32>
// CHECK-NOT: scf.for
// CHECK:     arith.divui %{{.+}}, %c2{{.*}} : index
// CHECK:     %[[LEVEL1:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK:     linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]{{.*}} ins(%{{.+}}, %[[LEVEL1]] :
// CHECK:     arith.subf
// CHECK-NOT: scf.for
// CHECK:     arith.divui %{{.+}}, %c4{{.*}} : index
// CHECK:     %[[LEVEL2:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK:     linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]{{.*}} ins(%{{.+}}, %[[LEVEL2]] :
// CHECK:     arith.subf
// CHECK:     linalg.generic {{.*}} ins(%{{.+}}, %[[BETA]] : tensor<4x4xf32>, tensor<4xf32>)
// CHECK:     arith.mulf
// The readout's (e^Γ ⊙ Q) S and U − W S:
// CHECK:     linalg.generic {{.*}} ins(%{{.+}}, %[[S]] : tensor<4x4xf32>, tensor<4x6xf32>)
// CHECK:     %[[WS:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[S]] : tensor<4x4xf32>, tensor<4x6xf32>)
// CHECK:     %[[DELTA:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[WS]] : tensor<4x6xf32>, tensor<4x6xf32>)
// CHECK:       arith.subf
// and the next state from it, Diag(e^{Γ_last}) S + K̃ᵀ (U − W S), copied
// into the carried one (no A = Diag(e^{Γ_last}) − K̃ᵀ W, no A S).
// CHECK:     %[[DECAYED:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[S]] : tensor<4xf32>, tensor<4x6xf32>)
// CHECK:       math.exp
// CHECK:     %[[UPDATE:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[DELTA]] : tensor<4x4xf32>, tensor<4x6xf32>)
// CHECK:     %[[NEXT:.+]] = linalg.generic {{.*}} ins(%[[DECAYED]], %[[UPDATE]] : tensor<4x6xf32>, tensor<4x6xf32>)
// CHECK:     linalg.copy ins(%[[NEXT]] : tensor<4x6xf32>) outs(%[[S]] : tensor<4x6xf32>)
// CHECK-NOT: hla.combine
// CHECK-NOT: hla.scan
func.func @kda(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<1x8x2x4xf32>, %beta: tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.25 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
