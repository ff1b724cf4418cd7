// RUN: hla-opt %s --split-input-file --hla-expand --hla-chunk="chunk-size=4 form=fused" | FileCheck %s

// Tests how hla-chunk sums KDA's in-chunk cumulative log-decay
// Γ[r] = Σ_{s ≤ r} max(g[s], −64) (SEMANTICS.md §6). With g in bf16 (or f32)
// it is a contraction of the lower-triangular ones with the raised g, whose
// operands are exact in the tensor cores' bf16; with g in f16 (three bits
// more than bf16) it stays a masked sum, the floor applied inside it.

// CHECK-LABEL: func.func @kda_bf16
// CHECK:     %[[RAISED:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.+}} : tensor<4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK:       arith.maximumf %{{.+}}, %{{.+}} : f32
// CHECK:     %[[ONES:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} outs(%{{.+}} : tensor<4x4xf32>)
// CHECK:       arith.cmpi sle
// CHECK:       arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK:     linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[ONES]], %[[RAISED]] : tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK-NEXT:  ^bb0(%{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT:    arith.mulf
// CHECK-NEXT:    arith.addf
func.func @kda_bf16(%q: tensor<1x8x1x4xbf16>, %k: tensor<1x8x1x4xbf16>, %v: tensor<1x8x1x4xbf16>, %g: tensor<1x8x1x4xbf16>, %beta: tensor<1x8x1xbf16>) -> tensor<1x8x1x4xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<1x8x1x4xbf16>, tensor<1x8x1x4xbf16>, tensor<1x8x1x4xbf16>, tensor<1x8x1x4xbf16>, tensor<1x8x1xbf16>) -> tensor<1x8x1x4xbf16>
  return %o : tensor<1x8x1x4xbf16>
}

// -----

// CHECK-LABEL: func.func @kda_f16
// CHECK:     linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.+}} : tensor<4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK:       arith.cmpi sle
// CHECK:       arith.maximumf
// CHECK:       arith.addf
// CHECK:       arith.select
func.func @kda_f16(%q: tensor<1x8x1x4xf16>, %k: tensor<1x8x1x4xf16>, %v: tensor<1x8x1x4xf16>, %g: tensor<1x8x1x4xf16>, %beta: tensor<1x8x1xf16>) -> tensor<1x8x1x4xf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>, tensor<1x8x1xf16>) -> tensor<1x8x1x4xf16>
  return %o : tensor<1x8x1x4xf16>
}
