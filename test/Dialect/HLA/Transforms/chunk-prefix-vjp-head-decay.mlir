// RUN: hla-opt %s --hla-chunk="chunk-size=4" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = per_head)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests the derived backward with a decay rate per head (10 tokens, 3
// chunks of 4, 2 heads): λ is saved per chunk (parallel gradients, which the
// rates' gradient needs, whatever the option says); every pass reads its
// head's log rate; a last pass, parallel over (batch entry, head, chunk),
// reverse-differentiates each chunk's forward program with respect to that
// log rate into a [B, H, chunks] tensor, which is summed over batch entries
// and chunks and divided by the rate: the last result.
// CHECK-LABEL: func.func @linear
// CHECK-SAME:  %[[RATES:[^:]+]]: tensor<2xf32>
// CHECK:       %[[STATES:.+]] = scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x12x3xf32>)
// CHECK:         tensor.extract_slice %[[RATES]][%{{.+}}] [1] [1] : tensor<2xf32> to tensor<f32>
// CHECK:         math.log
// CHECK:       %[[LAMBDAS:.+]] = scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x12x3xf32>)
// CHECK:       %[[GRADS:.+]]:3 = scf.forall ({{.*}}) in (1, 2, 3) {{.*}} -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>)
// CHECK:       %[[PER_CHUNK:.+]] = scf.forall (%[[B:[^ ]+]], %[[H:[^ ]+]], %[[C:[^ ]+]]) in (1, 2, 3) shared_outs(%[[OUT:[^ ]+]] = %{{.+}}) -> (tensor<1x2x3xf32>)
// CHECK:         %[[RATE:.+]] = tensor.extract_slice %[[RATES]][%[[H]]] [1] [1] : tensor<2xf32> to tensor<f32>
// CHECK:         %[[LOG:.+]] = linalg.generic {{.*}} ins(%[[RATE]] : tensor<f32>)
// CHECK:           math.log
// CHECK:         tensor.extract_slice %[[STATES]][%[[B]], %[[H]], %{{.*}}, 0] [1, 1, 4, 3]
// CHECK:         tensor.extract_slice %[[LAMBDAS]][%[[B]], %[[H]], %{{.*}}, 0] [1, 1, 4, 3]
// The forward program's decay weights read the log rate...
// CHECK:         linalg.generic {{.*}} ins(%[[LOG]] : tensor<f32>)
// CHECK:           math.exp
// ... and their derivative, accumulated into one 0-d cotangent per chunk.
// CHECK:         scf.forall.in_parallel
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[B]], %[[H]], %[[C]]] [1, 1, 1] [1, 1, 1] : tensor<f32> into tensor<1x2x3xf32>
// CHECK:       %[[DRATES:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]} ins(%[[PER_CHUNK]], %[[RATES]] : tensor<1x2x3xf32>, tensor<2xf32>)
// CHECK:         arith.divf
// CHECK:       return %[[GRADS]]#0, %[[GRADS]]#1, %[[GRADS]]#2, %[[DRATES]]
func.func @linear(%q: tensor<1x10x2x4xf32>, %k: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>, %g: tensor<1x10x2x3xf32>, %rates: tensor<2xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<2xf32>) {
  %dq, %dk, %dv, %dr = hla.prefix_vjp #la(%q, %k, %v) cotangent(%g) head_params(%rates) : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<1x10x2x3xf32>, tensor<2xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<2xf32>)
  return %dq, %dk, %dv, %dr : tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<2xf32>
}
