// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 form=fused anchor-rows=8" | FileCheck %s

// Tests hla-chunk on LinSimp's anchor readout (fused form): per (sequence,
// head), the chunk loop carries (M, a) and, per chunk, loops over the W = 4
// anchor offsets (one per pass: anchor-rows=8), carrying the window sums of num and den and each query's
// running maximum of its anchors' feature exponents; the anchor features are
// m^-½ exp(Ωx − ‖x‖²/2 − μ) (0 for padding anchors; their form:
// chunk-linsimp-features-exp2.mlir). A second loop over
// (sequence, head) gathers the last W − 1 = 3 anchors as the final anchor
// state. The keys' features are made per chunk from the key tile (the
// hla.feature_map is folded in and gone).

// CHECK-LABEL: func.func @favor_state
// CHECK-NOT: hla.feature_map
// CHECK: %[[RES:.+]]:3 = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>)
// CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<64x4xf32>, tensor<64xf32>, tensor<?x4xf32>)
// CHECK:     %[[C4:.+]] = arith.constant 4 : index
// CHECK:     scf.for %[[W:.+]] = %{{.+}} to %[[C4]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[MU:.+]] = %{{.+}}) -> (tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:       %[[OFF:.+]] = arith.subi %{{.+}}, %[[W]] : index
// CHECK:       tensor.extract_slice %{{.+}}[%[[OFF]], 0] [8, 8] [1, 1] : tensor<11x8xf32> to tensor<8x8xf32>
// CHECK:       arith.maximumf
// CHECK:       math.exp
// CHECK:       arith.select
// CHECK:       linalg.copy
// CHECK:     hla.combine #{{.+}}
// CHECK: %[[ANCHORS:.+]]:3 = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>)
// CHECK-NOT: hla.feature_map
// CHECK: return %[[RES]]#0, %[[RES]]#1, %[[RES]]#2, %[[ANCHORS]]#0, %[[ANCHORS]]#1, %[[ANCHORS]]#2
func.func @favor_state(%q: tensor<1x32x2x8xf32>, %k: tensor<1x32x1x8xf32>, %v: tensor<1x32x1x4xf32>, %r: tensor<1x32x1x8xf32>, %u: tensor<1x32x1x4xf32>, %omega: tensor<64x8xf32>,
                       %m0: tensor<1x2x64x4xf32>, %a0: tensor<1x2x64xf32>, %ar: tensor<1x2x3x8xf32>, %au: tensor<1x2x3x4xf32>, %av: tensor<1x2x3xf32>)
    -> (tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) {
  %o:6 = hla.linsimp %q, %k, %v, %r, %u, %omega initial_state(%m0, %a0, %ar, %au, %av) {window = 4 : i64} : (tensor<1x32x2x8xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<64x8xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) -> (tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>)
  return %o#0, %o#1, %o#2, %o#3, %o#4, %o#5 : tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>
}
