// RUN: hla-opt %s --hla-chunk="chunk-size=4 value-tile=-1 parallelism=8" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>
#lan = #hla.monoid<"lan" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], m: [d])
  token(P = k * v.T, m = k) combine(P = P.a + P.b, m = m.a + m.b)
  readout(num = q.T * P, den = q.T * m)>

// Tests the automatic value tiles of the derived backward: with 2
// (batch entry, head) pairs and parallelism 8, the most tiles of at least
// 16 columns that fit: 4 of 16. Without parallel gradients only pass 1 is
// cut (the reverse pass sums dq over every column). The module records
// both decisions.
// CHECK:       module attributes {hla.chunking = ["la backward: two passes, the first in 4 value tiles of 16 columns", "lan backward: two passes"]}
// CHECK-LABEL: func.func @auto
// CHECK:       scf.forall ({{.*}}) in (1, 2, 4) shared_outs({{.*}}) -> (tensor<1x2x8x64xf32>)
// CHECK:         scf.for {{.*}} -> (tensor<4x16xf32>, tensor<8x16xf32>)
// CHECK:       scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>)
func.func @auto(%q: tensor<1x5x2x4xf32>, %v: tensor<1x5x2x64xf32>) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>) {
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>, tensor<1x5x2x64xf32>) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>
}

// Tests that the automatic choice keeps whole rows where the monoid does
// not allow value tiles (the normalizer's gradient sums over every column).
// CHECK-LABEL: func.func @normalized
// CHECK:       scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x8x64xf32>, tensor<1x2x8xf32>)
// CHECK:       scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>)
func.func @normalized(%q: tensor<1x5x2x4xf32>, %v: tensor<1x5x2x64xf32>) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>) {
  %r:3 = hla.prefix_vjp #lan (%q, %q, %v) cotangent(%v) : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>, tensor<1x5x2x64xf32>) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x64xf32>
}
