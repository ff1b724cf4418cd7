// RUN: hla-opt %s --hla-chunk="chunk-size=4 parallel-gradients=true" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests the derived backward with parallel gradients (10 tokens, 3 chunks
// of 4): pass 1 saves the state entering each chunk into a [B, H, 3·4, 3]
// stack; pass 2, per (batch entry, head) from the last chunk to the first,
// carries only λ (the cotangent of the carried-out state), saving each
// chunk's λ into a stack of the same shape before handing ∂X₀ on; pass 3,
// parallel over (batch entry, head, chunk), reads the chunk's saved state
// and λ and writes its rows of the three gradients.
// CHECK-LABEL: func.func @linear
// CHECK:       %[[STATES:.+]] = scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x12x3xf32>)
// CHECK:         scf.for
// CHECK:       %[[LAMBDAS:.+]] = scf.forall ({{.*}}) in (1, 2) shared_outs(%[[OUT:[^ ]+]] = %{{.*}}) -> (tensor<1x2x12x3xf32>)
// CHECK:         %[[ROWS:.+]] = tensor.extract_slice %[[OUT]]
// CHECK:         scf.for {{.*}} iter_args(%[[LAMBDA:[^ ]+]] = %{{.*}}, %[[SAVED:[^ ]+]] = %[[ROWS]]) -> (tensor<4x3xf32>, tensor<12x3xf32>)
// CHECK:           tensor.insert_slice %[[LAMBDA]] into %[[SAVED]][%{{.*}}, 0] [4, 3]
// CHECK:           %[[X0:.+]] = tensor.extract_slice %[[STATES]]
// CHECK:           hla.combine #{{.*}}(%[[X0]], %[[LAMBDA]], %{{.*}}), (
// CHECK:           linalg.copy ins(%{{.*}} : tensor<4x3xf32>) outs(%[[LAMBDA]] : tensor<4x3xf32>)
// CHECK:         scf.forall.in_parallel
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[OUT]]
// CHECK-NEXT:    }
// CHECK:       %[[GRADS:.+]]:3 = scf.forall (%[[B:[^ ]+]], %[[H:[^ ]+]], %[[C:[^ ]+]]) in (1, 2, 3) shared_outs(%[[DQ:[^ ]+]] = %{{.*}}, %[[DK:[^ ]+]] = %{{.*}}, %[[DV:[^ ]+]] = %{{.*}}) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>)
// CHECK-NOT:     scf.for
// CHECK:         %[[L:.+]] = tensor.extract_slice %[[LAMBDAS]][%[[B]], %[[H]], %{{.*}}, 0] [1, 1, 4, 3]
// CHECK:         %[[START:.+]] = arith.muli %[[C]], %c4
// CHECK:         %[[X:.+]] = tensor.extract_slice %[[STATES]][%[[B]], %[[H]], %{{.*}}, 0] [1, 1, 4, 3]
// CHECK:         hla.combine #{{.*}}(%[[X]], %[[L]], %{{.*}}), (
// CHECK:         scf.forall.in_parallel
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[DQ]][%[[B]], %[[START]], %[[H]], 0] [1, %{{.*}}, 1, 4]
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[DK]][%[[B]], %[[START]], %[[H]], 0] [1, %{{.*}}, 1, 4]
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[DV]][%[[B]], %[[START]], %[[H]], 0] [1, %{{.*}}, 1, 3]
// CHECK:       return %[[GRADS]]#0, %[[GRADS]]#1, %[[GRADS]]#2
// CHECK-NOT:   hla.prefix_vjp
func.func @linear(%q: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>) {
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>
}
