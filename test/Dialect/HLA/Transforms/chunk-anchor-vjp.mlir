// RUN: hla-opt %s --hla-derive-vjp --hla-chunk="chunk-size=4" | FileCheck %s

// Tests LinSimp's backward in chunks (11 tokens in chunks of 4, window 3):
// pass 1 saves the state entering each chunk (M and a, [B, H, N, ...]);
// pass 2 runs from the last chunk to the first carrying λ of M, a and of
// the anchor ring (the last W−1 = 2 anchors' r and u), and Ω's gradient.
// Each chunk loops over its W anchor offsets three times: for each query's
// shift (a maximum), for the window's sums under it, and for each offset's
// program in reverse, the gradients summed over offsets (q, the window's r
// and u rows, Φ, v, M, a, Ω). Ω's gradient is summed over (batch entry,
// head) after the pass.
// CHECK-LABEL: module attributes {hla.chunking = ["linsimp backward: two passes, each chunk's anchor offsets differentiated in reverse"]}
// CHECK:         %[[STATES:.+]]:2 = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x3x8x3xf32>, tensor<1x2x3x8xf32>)
// CHECK:           scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args({{.*}}) -> (tensor<8x3xf32>, tensor<8xf32>, tensor<3x8x3xf32>, tensor<3x8xf32>)
// CHECK:         %[[G:.+]]:6 = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x2x8x4xf32>)
// CHECK:           scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args({{.*}}) -> (tensor<8x3xf32>, tensor<8xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<8x4xf32>, tensor<11x4xf32>, tensor<11x4xf32>, tensor<11x3xf32>, tensor<11x4xf32>, tensor<11x3xf32>)
// CHECK:             tensor.extract_slice %[[STATES]]#0
// CHECK:             tensor.extract_slice %[[STATES]]#1
// CHECK:             scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<4xf32>)
// CHECK:               arith.maximumf
// CHECK:             scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x3xf32>, tensor<4xf32>)
// CHECK:             scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<4x4xf32>, tensor<6x4xf32>, tensor<6x3xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<8x3xf32>, tensor<8xf32>, tensor<8x4xf32>)
// CHECK:           scf.forall.in_parallel
// CHECK-COUNT-6:     tensor.parallel_insert_slice
// CHECK:         %[[DOMEGA:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "reduction", "parallel", "parallel"]} ins(%[[G]]#5 : tensor<1x2x8x4xf32>) outs(%{{.+}} : tensor<8x4xf32>)
// CHECK:         return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3, %[[G]]#4, %[[DOMEGA]]
func.func @main(%q: tensor<1x11x2x4xf32>, %k: tensor<1x11x2x4xf32>, %v: tensor<1x11x2x3xf32>, %r: tensor<1x11x2x4xf32>, %u: tensor<1x11x2x3xf32>, %omega: tensor<8x4xf32>) -> tensor<1x11x2x3xf32> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 3 : i64} : (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<8x4xf32>) -> tensor<1x11x2x3xf32>
  return %o : tensor<1x11x2x3xf32>
}
