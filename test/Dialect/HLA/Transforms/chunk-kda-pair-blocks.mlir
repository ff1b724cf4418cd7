// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=48 form=fused" | FileCheck %s
// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=48 form=fused" | FileCheck %s --check-prefix=PER-PAIR

// Tests KDA's in-chunk pair products P[r, s] = Σ_d x_rd y_sd e^{Γ_rd − Γ_sd}
// (A_kk and A_qk, SEMANTICS.md §6) in blocks of 16 tokens: pairs of one
// block are a band of 16 columns, the exponential inside the sum (the band's
// maps read token ρ(r) + j, ρ(r) the first token of r's block); pairs of
// different blocks factor through the first token of the later block (rows
// 16 and 32 of Γ here), e^{Γ_r − Γ_ρ} for the rows of that block and
// e^{Γ_ρ − Γ_s} for the rows before it (the keys' side made once, for A_kk
// and A_qk), one contraction over d per reference block, the two summed;
// then P takes the band within blocks, the sum across them. No [48, 48] sum
// takes an exponential per pair.

// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$BAND:.+]] = affine_map<(d0, d1, d2) -> ((d0 floordiv 16) * 16 + d1, d2)>
// CHECK-DAG: #[[$PAIR:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$IN_BAND:.+]] = affine_map<(d0, d1) -> (d0, d1 mod 16)>
// CHECK-LABEL: func.func @kda
// CHECK:     %[[GAMMA:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK:     %[[BAND_KK:.+]] = linalg.generic {indexing_maps = [#[[$ROW]], #[[$BAND]], #[[$ROW]], #[[$BAND]], #[[$PAIR]]]{{.*}} outs(%{{.+}} : tensor<48x16xf32>)
// CHECK:       arith.remui %{{.+}}, %c16
// CHECK:       arith.cmpi slt
// CHECK:       math.exp
// CHECK:     %[[REF1:.+]] = tensor.extract_slice %[[GAMMA]][16, 0] [1, 4] [1, 1] : tensor<48x4xf32> to tensor<4xf32>
// CHECK:     %[[FROM1:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[GAMMA]], %[[REF1]] : tensor<48x4xf32>, tensor<48x4xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<48x4xf32>)
// CHECK:       math.exp
// CHECK:     %[[REF2:.+]] = tensor.extract_slice %[[GAMMA]][32, 0] [1, 4] [1, 1] : tensor<48x4xf32> to tensor<4xf32>
// CHECK:     %[[FROM2:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[GAMMA]], %[[REF2]] : {{.*}}) outs(%{{.+}} : tensor<48x4xf32>)
// CHECK:     %[[TOWARD1:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<48x4xf32>)
// CHECK:       math.exp
// CHECK:     %[[ACROSS1:.+]] = linalg.generic {{.*}} ins(%[[TOWARD1]], %[[FROM1]] : tensor<48x4xf32>, tensor<48x4xf32>) outs(%{{.+}} : tensor<48x48xf32>)
// CHECK:     %[[TOWARD2:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<48x4xf32>)
// CHECK:     %[[ACROSS2:.+]] = linalg.generic {{.*}} ins(%[[TOWARD2]], %[[FROM2]] : tensor<48x4xf32>, tensor<48x4xf32>) outs(%{{.+}} : tensor<48x48xf32>)
// CHECK:     %[[ACROSS:.+]] = linalg.generic {{.*}} ins(%[[ACROSS1]], %[[ACROSS2]] : tensor<48x48xf32>, tensor<48x48xf32>)
// CHECK:     linalg.generic {indexing_maps = [#[[$IN_BAND]], {{.*}} ins(%[[BAND_KK]], %[[ACROSS]] : tensor<48x16xf32>, tensor<48x48xf32>) outs(%{{.+}} : tensor<48x48xf32>)
// CHECK:       arith.divui
// CHECK:       arith.cmpi eq
// CHECK:       arith.select
// The readout's A_qk: a band that keeps the diagonal (sle), and the keys
// scaled from the references that A_kk made.
// CHECK:     linalg.generic {indexing_maps = [#[[$ROW]], #[[$BAND]], #[[$ROW]], #[[$BAND]], #[[$PAIR]]]{{.*}} outs(%{{.+}} : tensor<48x16xf32>)
// CHECK:       arith.cmpi sle
// CHECK:     linalg.generic {{.*}} ins(%{{.+}}, %[[FROM1]] : tensor<48x4xf32>, tensor<48x4xf32>) outs(%{{.+}} : tensor<48x48xf32>)
// CHECK:     linalg.generic {{.*}} ins(%{{.+}}, %[[FROM2]] : tensor<48x4xf32>, tensor<48x4xf32>) outs(%{{.+}} : tensor<48x48xf32>)

// No sum over the whole chunk's pairs reads x, y and Γ twice:
// PER-PAIR-LABEL: func.func @kda
// PER-PAIR-NOT: : tensor<48x4xf32>, tensor<48x4xf32>, tensor<48x4xf32>, tensor<48x4xf32>) outs(%{{.+}} : tensor<48x48xf32>)
func.func @kda(%q: tensor<1x100x1x4xf32>, %k: tensor<1x100x1x4xf32>, %v: tensor<1x100x1x6xf32>, %g: tensor<1x100x1x4xf32>, %beta: tensor<1x100x1xf32>) -> tensor<1x100x1x6xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.5 : f64} : (tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x6xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1xf32>) -> tensor<1x100x1x6xf32>
  return %o : tensor<1x100x1x6xf32>
}
