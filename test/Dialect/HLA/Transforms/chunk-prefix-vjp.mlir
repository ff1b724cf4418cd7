// RUN: hla-opt %s --hla-chunk="chunk-size=4" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests the loops of the derived backward (10 tokens, 3 chunks of 4): per
// (batch entry, head), a pass storing the state carried into each chunk,
// then a pass from the last chunk to the first carrying λ (the cotangent of
// the carried-out state) beside the three gradients' rows; the transposed
// combine rule is an hla.combine under an auxiliary monoid (for P = P.a +
// P.b, both λ's way back and the summary's cotangent are λ itself).
// CHECK: #[[$T:.+]] = #hla.monoid<"la_transposed_combine" state(P: [d, dv], dout_P: [d, dv], dsum_P: [d, dv]) combine(P = 0, dout_P = dout_P.a, dsum_P = dout_P.a)>
// CHECK-LABEL: func.func @linear
// CHECK:       scf.forall ({{.*}}) in (1, 2) shared_outs
// CHECK:         scf.for {{.*}} -> (tensor<3x4x3xf32>)
// CHECK:           hla.combine #{{.*}}(%{{.*}}), (%{{.*}}) : (tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK:         scf.for {{.*}} iter_args(%[[LAMBDA:[^ ]+]] = {{.*}}) -> (tensor<4x3xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x3xf32>)
// CHECK:           %[[LAST:.+]] = arith.subi %c3, %c1
// CHECK:           arith.subi %[[LAST]], %arg
// CHECK:           hla.combine #[[$T]](%{{.*}}, %[[LAMBDA]], %{{.*}}), (
// CHECK:           linalg.copy ins(%{{.*}} : tensor<4x3xf32>) outs(%[[LAMBDA]] : tensor<4x3xf32>)
// CHECK:         scf.forall.in_parallel
// CHECK-COUNT-3:   tensor.parallel_insert_slice
// CHECK-NOT:   hla.prefix_vjp
func.func @linear(%q: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>) {
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>
}
