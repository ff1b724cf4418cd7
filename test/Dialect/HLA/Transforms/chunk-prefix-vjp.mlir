// RUN: hla-opt %s --hla-chunk="chunk-size=4" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests the loops of the derived backward (10 tokens, 3 chunks of 4): a
// pass per (batch entry, head) carrying the state and saving the state
// entering each chunk into a [B, H, 3·4, 3] stack (a kernel of its own on
// the GPU), then a pass per (batch entry, head) from the last chunk to the
// first reading the saved states and carrying λ (the cotangent of the
// carried-out state) beside the three gradients' rows; the transposed
// combine rule is an hla.combine under an auxiliary monoid (for P = P.a +
// P.b, both λ's way back and the summary's cotangent are λ itself).
// CHECK: #[[$T:.+]] = #hla.monoid<"la_transposed_combine" state(P: [d, dv], dout_P: [d, dv], dsum_P: [d, dv]) combine(P = 0, dout_P = dout_P.a, dsum_P = dout_P.a)>
// CHECK-LABEL: func.func @linear
// CHECK:       %[[STACK:.+]] = scf.forall ({{.*}}) in (1, 2) shared_outs(%[[OUT:[^ ]+]] = %{{.*}}) -> (tensor<1x2x12x3xf32>)
// CHECK:         %[[ROWS:.+]] = tensor.extract_slice %[[OUT]]
// CHECK:         scf.for %[[C:[^ ]+]] = {{.*}} iter_args(%[[STATE:[^ ]+]] = %{{.*}}, %[[SAVED:[^ ]+]] = %[[ROWS]]) -> (tensor<4x3xf32>, tensor<12x3xf32>)
// CHECK:           %[[AT:.+]] = arith.muli %[[C]], %c4
// CHECK:           tensor.insert_slice %[[STATE]] into %[[SAVED]][%[[AT]], 0] [4, 3]
// CHECK:           hla.combine #{{.*}}(%[[STATE]]), (%{{.*}}) : (tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK:           linalg.copy ins(%{{.*}} : tensor<4x3xf32>) outs(%[[STATE]] : tensor<4x3xf32>)
// CHECK:         scf.forall.in_parallel
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[OUT]]
// CHECK:       scf.forall ({{.*}}) in (1, 2) shared_outs
// CHECK:         scf.for {{.*}} iter_args(%[[LAMBDA:[^ ]+]] = {{.*}}) -> (tensor<4x3xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x3xf32>)
// CHECK:           %[[LAST:.+]] = arith.subi %c3, %c1
// CHECK:           arith.subi %[[LAST]], %arg
// CHECK:           %[[X0:.+]] = tensor.extract_slice %[[STACK]]
// CHECK:           hla.combine #[[$T]](%[[X0]], %[[LAMBDA]], %{{.*}}), (
// CHECK:           linalg.copy ins(%{{.*}} : tensor<4x3xf32>) outs(%[[LAMBDA]] : tensor<4x3xf32>)
// CHECK:         scf.forall.in_parallel
// CHECK-COUNT-3:   tensor.parallel_insert_slice
// CHECK-NOT:   hla.prefix_vjp
func.func @linear(%q: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>) {
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>
}
