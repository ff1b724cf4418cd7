// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 form=fused anchor-rows=16" | FileCheck %s

// Tests hla-chunk's stacked anchor passes on LinSimp (window W = 4, chunk
// c = 8, anchor-rows = 16): each pass reads G = 2 anchor offsets of every
// query out at once, so the window takes W / G = 2 passes whose tiles have
// G · c = 16 rows — the queries stacked twice (once per chunk), the anchor
// rows of offsets w and w + 1 stacked, the causal mask between the stacked
// rows and the chunk's keys [16, 8] (row ρ is query ρ mod c). After the
// window, each query's two rows are brought to the larger of their shifts
// and summed. The bf16 feature matrix is converted to f32 once, ahead of
// every loop, so the projections are f32 contractions.

// CHECK-LABEL: func.func @stacked
// CHECK-SAME: %[[OMEGA:[^:]+]]: tensor<16x8xbf16>
// CHECK: %[[OMEGA32:.+]] = linalg.generic {{.*}} ins(%[[OMEGA]] : tensor<16x8xbf16>) outs(%{{.+}} : tensor<16x8xf32>)
// CHECK: arith.extf
// CHECK: scf.forall
// CHECK:   linalg.generic {{.*}} outs(%{{.+}} : tensor<16x8xf32>)
// CHECK:     arith.remui
// CHECK:   scf.for
// CHECK:     tensor.insert_slice %{{.+}} into %{{.+}}[8, 0] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<16x8xf32>
// CHECK:     %[[C2:.+]] = arith.constant 2 : index
// CHECK:     %[[WIN:.+]]:3 = scf.for %[[W:.+]] = %{{.+}} to %{{.+}} step %[[C2]] iter_args({{.*}}) -> (tensor<16x4xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK:       tensor.extract_slice %{{.+}}[%{{.+}}, 0] [8, 8] [1, 1] : tensor<11x8xf32> to tensor<8x8xf32>
// CHECK:       tensor.insert_slice %{{.+}} into %{{.+}}[8, 0] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<16x8xf32>
// CHECK:       linalg.generic {{.*}} ins(%{{.+}}, %[[OMEGA32]] : tensor<16x8xf32>, tensor<16x8xf32>) outs(%{{.+}} : tensor<16x16xf32>)
// CHECK:       math.exp
// CHECK:       scf.yield
// CHECK:     tensor.extract_slice %[[WIN]]#2[0] [8] [1] : tensor<16xf32> to tensor<8xf32>
// CHECK:     tensor.extract_slice %[[WIN]]#2[8] [8] [1] : tensor<16xf32> to tensor<8xf32>
// CHECK:     arith.maximumf
// CHECK:     tensor.extract_slice %[[WIN]]#0[8, 0] [8, 4] [1, 1] : tensor<16x4xf32> to tensor<8x4xf32>
// CHECK:     arith.divf
func.func @stacked(%q: tensor<1x20x1x8xbf16>, %k: tensor<1x20x1x8xbf16>, %v: tensor<1x20x1x4xbf16>, %r: tensor<1x20x1x8xbf16>, %u: tensor<1x20x1x4xbf16>, %omega: tensor<16x8xbf16>) -> tensor<1x20x1x4xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 4 : i64} : (tensor<1x20x1x8xbf16>, tensor<1x20x1x8xbf16>, tensor<1x20x1x4xbf16>, tensor<1x20x1x8xbf16>, tensor<1x20x1x4xbf16>, tensor<16x8xbf16>) -> tensor<1x20x1x4xbf16>
  return %o : tensor<1x20x1x4xbf16>
}
