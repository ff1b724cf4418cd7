// RUN: hla-opt %s --hla-derive-vjp --hla-chunk=chunk-size=4 | FileCheck %s

// Tests KDA's backward as hla-chunk lowers it (11 tokens in chunks of 4:
// three chunks, the last of three tokens): a pass per (batch entry, head)
// saves the state entering each chunk into a [B, H, N·dk, dv] stack, over
// the state written in place; a pass from the last chunk to the first
// carries λ (from zero: no final state here) and writes every input's
// gradient rows; the decision is recorded.
// CHECK-LABEL: module attributes {hla.chunking = ["kda backward: two passes, the chunk's WY/UT form differentiated in reverse"]}
// CHECK:         %[[STACK0:.+]] = tensor.empty() : tensor<1x2x12x3xf32>
// CHECK:         %[[STACK:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %[[STACK0]]) -> (tensor<1x2x12x3xf32>)
// CHECK:           scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args(%[[S:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x3xf32>, tensor<12x3xf32>)
// CHECK:             tensor.insert_slice %[[S]] into
// CHECK:             linalg.copy ins(%{{.+}} : tensor<4x3xf32>) outs(%[[S]] : tensor<4x3xf32>)
// CHECK:         %[[G:.+]]:5 = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2xf32>)
// CHECK:           scf.for %[[J:.+]] = %c0 to %c3 step %c1 iter_args(%[[L:[^ ]+]] = %{{.+}}, {{.*}}) -> (tensor<4x3xf32>, tensor<11x4xf32>, tensor<11x4xf32>, tensor<11x3xf32>, tensor<11x4xf32>, tensor<11xf32>)
// CHECK:             %[[C:.+]] = arith.subi %c2, %[[J]] : index
// CHECK:             tensor.extract_slice %[[STACK]]
// CHECK:             linalg.copy ins(%{{.+}} : tensor<4x3xf32>) outs(%[[L]] : tensor<4x3xf32>)
// CHECK:           scf.forall.in_parallel
// CHECK-COUNT-5:     tensor.parallel_insert_slice
// CHECK:         return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3, %[[G]]#4
func.func @main(%q: tensor<1x11x2x4xf32>, %k: tensor<1x11x2x4xf32>, %v: tensor<1x11x2x3xf32>, %g: tensor<1x11x2x4xf32>, %beta: tensor<1x11x2xf32>) -> tensor<1x11x2x3xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.5 : f64} : (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2xf32>) -> tensor<1x11x2x3xf32>
  return %o : tensor<1x11x2x3xf32>
}
