// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=16 form=segmented parallelism=8" | FileCheck %s

// Tests how hla-chunk's segmented form picks its run count S, modelling
// ceil(B*H*S / 8) waves of 1.5/S sequence-times plus, for the last run, the
// S - 1 summaries it folds first (a chunk's time each): for 1x2 (batch,
// head) pairs, S = 4 for the 16 chunks of the first function (S = 8 would
// take two waves); the second has only 5 chunks, so at most 2 runs (two
// chunks each at least); with 8 pairs every extra run costs a wave, so the
// third keeps the fused form, as does the fourth, whose sequences are
// packed.

// CHECK-LABEL: func.func @long
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, 2)
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, 2)
func.func @long(%q: tensor<1x256x2x4xf32>) -> tensor<1x256x2x4xf32> {
  %o = hla.linear_attention %q, %q, %q {scale = 1.0 : f64} : (tensor<1x256x2x4xf32>, tensor<1x256x2x4xf32>, tensor<1x256x2x4xf32>) -> tensor<1x256x2x4xf32>
  return %o : tensor<1x256x2x4xf32>
}

// CHECK-LABEL: func.func @short
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 2)
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 2)
func.func @short(%q: tensor<1x80x2x4xf32>) -> tensor<1x80x2x4xf32> {
  %o = hla.linear_attention %q, %q, %q {scale = 1.0 : f64} : (tensor<1x80x2x4xf32>, tensor<1x80x2x4xf32>, tensor<1x80x2x4xf32>) -> tensor<1x80x2x4xf32>
  return %o : tensor<1x80x2x4xf32>
}

// CHECK-LABEL: func.func @many_heads
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (1, 8)
// CHECK-NOT: scf.forall (
// CHECK: return
func.func @many_heads(%q: tensor<1x256x8x4xf32>) -> tensor<1x256x8x4xf32> {
  %o = hla.linear_attention %q, %q, %q {scale = 1.0 : f64} : (tensor<1x256x8x4xf32>, tensor<1x256x8x4xf32>, tensor<1x256x8x4xf32>) -> tensor<1x256x8x4xf32>
  return %o : tensor<1x256x8x4xf32>
}

// CHECK-LABEL: func.func @packed
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (2, 2)
// CHECK-NOT: scf.forall (
// CHECK: return
func.func @packed(%q: tensor<1x256x2x4xf32>, %cu: tensor<3xi32>) -> tensor<1x256x2x4xf32> {
  %o = hla.linear_attention %q, %q, %q cu_seqlens(%cu) {scale = 1.0 : f64} : (tensor<1x256x2x4xf32>, tensor<1x256x2x4xf32>, tensor<1x256x2x4xf32>, tensor<3xi32>) -> tensor<1x256x2x4xf32>
  return %o : tensor<1x256x2x4xf32>
}
