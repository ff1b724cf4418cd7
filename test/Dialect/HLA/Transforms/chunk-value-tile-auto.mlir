// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=16 form=fused value-tile=-1 parallelism=8" | FileCheck %s --check-prefix=FUSED
// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=16 form=segmented value-tile=-1 parallelism=8" | FileCheck %s --check-prefix=FUSED
// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=16 form=segmented value-tile=-1 parallelism=132" | FileCheck %s --check-prefix=SEGMENTED
// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=16 form=fused value-tile=-1 parallelism=2" | FileCheck %s --check-prefix=WHOLE

// Tests hla-chunk's automatic value tiles (value-tile=-1) for 2 (sequence,
// head) pairs and dv = 128: the most tiles, a power of two of at least 32
// columns each, whose iterations fit in `parallelism`. With 8: 4 tiles of
// 32 columns (8 iterations), also instead of segments in the segmented form,
// since they fill at least half of it. With 132 they would fill 8 of 132,
// so the segmented form keeps its segments (4) and whole rows; with 2 the
// pairs alone fill it. The decision is recorded on the module.

// FUSED: module attributes {hla.chunking = ["linear_attention: fused, 4 value tiles of 32 columns"]}
// FUSED-LABEL: func.func @linear
// FUSED: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 4)
// FUSED: scf.for {{.+}} -> (tensor<16x32xf32>, tensor<?x32xf32>)
// FUSED-NOT: scf.forall (

// SEGMENTED: module attributes {hla.chunking = ["linear_attention: segmented, 4 segments"]}
// SEGMENTED-LABEL: func.func @linear
// SEGMENTED: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, 2)
// SEGMENTED: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, 2)

// WHOLE: module attributes {hla.chunking = ["linear_attention: fused"]}
// WHOLE-LABEL: func.func @linear
// WHOLE: scf.forall (%{{.+}}, %{{.+}}) in (1, 2)
// WHOLE: scf.for {{.+}} -> (tensor<16x128xf32>, tensor<?x128xf32>)
func.func @linear(%q: tensor<1x200x2x16xf32>, %k: tensor<1x200x2x16xf32>, %v: tensor<1x200x2x128xf32>) -> tensor<1x200x2x128xf32> {
  %o = hla.linear_attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x200x2x16xf32>, tensor<1x200x2x16xf32>, tensor<1x200x2x128xf32>) -> tensor<1x200x2x128xf32>
  return %o : tensor<1x200x2x128xf32>
}
