// RUN: hla-opt %s --hla-chunk="chunk-size=4 parallel-gradients=true value-tile=2" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests the derived backward with value tiles of 2 of the 6 value columns
// (10 tokens, 3 chunks of 4): pass 1 runs per (batch entry, head, tile),
// reading its columns of v and saving its columns of the state entering
// each chunk; pass 2 likewise reads its columns of the cotangent and of
// the saved states and saves its columns of λ; pass 3, parallel over
// chunks, reads every column.
// CHECK-LABEL: func.func @linear
// CHECK:       %[[STATES:.+]] = scf.forall (%[[B:[^ ]+]], %[[H:[^ ]+]], %[[T:[^ ]+]]) in (1, 2, 3) shared_outs(%[[OUT:[^ ]+]] = %{{.*}}) -> (tensor<1x2x12x6xf32>)
// CHECK:         %[[COL:.+]] = arith.muli %[[T]], %c2
// CHECK:         %[[ROWS:.+]] = tensor.extract_slice %[[OUT]][%[[B]], %[[H]], 0, %[[COL]]] [1, 1, 12, 2]
// CHECK:         scf.for {{.*}} iter_args(%[[STATE:[^ ]+]] = %{{.*}}, %[[SAVED:[^ ]+]] = %[[ROWS]]) -> (tensor<4x2xf32>, tensor<12x2xf32>)
// CHECK:           tensor.insert_slice %[[STATE]] into %[[SAVED]][%{{.*}}, 0] [4, 2]
// CHECK:           tensor.extract_slice %arg1[%[[B]], %{{.*}}, %[[H]], %[[COL]]] [1, %{{.*}}, 1, 2]
// CHECK:         scf.forall.in_parallel
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[B]], %[[H]], 0, %[[COL]]] [1, 1, 12, 2]
// CHECK:       %[[LAMBDAS:.+]] = scf.forall (%[[B2:[^ ]+]], %[[H2:[^ ]+]], %[[T2:[^ ]+]]) in (1, 2, 3) shared_outs(%[[OUT2:[^ ]+]] = %{{.*}}) -> (tensor<1x2x12x6xf32>)
// CHECK:         %[[COL2:.+]] = arith.muli %[[T2]], %c2
// CHECK:         scf.for {{.*}} -> (tensor<4x2xf32>, tensor<12x2xf32>)
// CHECK:           tensor.extract_slice %[[STATES]][%[[B2]], %[[H2]], %{{.*}}, %[[COL2]]] [1, 1, 4, 2]
// CHECK:           tensor.extract_slice %arg1[%[[B2]], %{{.*}}, %[[H2]], %[[COL2]]] [1, %{{.*}}, 1, 2]
// CHECK:         scf.forall.in_parallel
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[OUT2]][%[[B2]], %[[H2]], 0, %[[COL2]]] [1, 1, 12, 2]
// CHECK:       scf.forall ({{.*}}) in (1, 2, 3) shared_outs({{.*}}) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x6xf32>)
// CHECK:         tensor.extract_slice %[[LAMBDAS]][{{.*}}, 0] [1, 1, 4, 6]
// CHECK:         tensor.extract_slice %[[STATES]][{{.*}}, 0] [1, 1, 4, 6]
// CHECK-NOT:   hla.prefix_vjp
func.func @linear(%q: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x6xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x6xf32>) {
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x6xf32>, tensor<1x10x2x6xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x6xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x6xf32>
}
