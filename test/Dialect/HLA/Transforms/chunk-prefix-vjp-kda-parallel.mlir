// RUN: hla-opt %s --hla-derive-vjp --hla-chunk="chunk-size=4 parallel-gradients=true" | FileCheck %s

// Tests KDA's backward with parallel gradients (11 tokens in chunks of 4):
// pass 2 carries λ alone and saves the λ leaving each chunk into a second
// [B, H, N·dk, dv] stack (before λ is written over itself); pass 3, a
// forall over (batch entry, head, chunk), writes each chunk's rows of the
// five gradients.
// CHECK-LABEL: module attributes {hla.chunking = ["kda backward: parallel gradients, the chunk's WY/UT form differentiated in reverse"]}
// CHECK:         %[[STATES:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x2x12x3xf32>)
// CHECK:         %[[LAMBDAS:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x2x12x3xf32>)
// CHECK:           scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args(%[[L:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x3xf32>, tensor<12x3xf32>)
// CHECK:             %[[SAVED:.+]] = tensor.insert_slice %[[L]] into
// CHECK:             linalg.copy ins(%{{.+}} : tensor<4x3xf32>) outs(%[[L]] : tensor<4x3xf32>)
// CHECK:             scf.yield %{{.+}}, %[[SAVED]]
// CHECK:         %[[G:.+]]:5 = scf.forall (%{{.+}}, %{{.+}}, %[[C:.+]]) in (1, 2, 3) shared_outs({{.*}}) -> (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2xf32>)
// CHECK-DAG:       tensor.extract_slice %[[STATES]]
// CHECK-DAG:       tensor.extract_slice %[[LAMBDAS]]
// CHECK:           scf.forall.in_parallel
// CHECK-COUNT-5:     tensor.parallel_insert_slice
// CHECK:         return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3, %[[G]]#4
func.func @main(%q: tensor<1x11x2x4xf32>, %k: tensor<1x11x2x4xf32>, %v: tensor<1x11x2x3xf32>, %g: tensor<1x11x2x4xf32>, %beta: tensor<1x11x2xf32>) -> tensor<1x11x2x3xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.5 : f64} : (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2xf32>) -> tensor<1x11x2x3xf32>
  return %o : tensor<1x11x2x3xf32>
}
