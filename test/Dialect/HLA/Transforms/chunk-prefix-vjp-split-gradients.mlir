// RUN: hla-opt %s --hla-chunk="chunk-size=4 parallel-gradients=true split-gradients=true" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests the derived backward with parallel gradients split by input (10
// tokens, 3 chunks of 4): after the passes saving the states and λ, one
// pass per input, parallel over (batch entry, head, chunk), each reading
// the chunk's saved state and λ and writing that input's gradient alone.
// CHECK:       module attributes {hla.chunking = ["la backward: parallel gradients split by input"]}
// CHECK-LABEL: func.func @linear
// CHECK:       %[[STATES:.+]] = scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x12x3xf32>)
// CHECK:       %[[LAMBDAS:.+]] = scf.forall ({{.*}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x2x12x3xf32>)
// CHECK:       %[[DQ:.+]] = scf.forall ({{.*}}) in (1, 2, 3) shared_outs(%[[OUT:[^ ]+]] = %{{.*}}) -> (tensor<1x10x2x4xf32>)
// CHECK:         tensor.extract_slice %[[LAMBDAS]]
// CHECK:         tensor.extract_slice %[[STATES]]
// CHECK:         scf.forall.in_parallel
// CHECK-NEXT:      tensor.parallel_insert_slice %{{.*}} into %[[OUT]]
// CHECK-NEXT:    }
// CHECK:       %[[DK:.+]] = scf.forall ({{.*}}) in (1, 2, 3) shared_outs({{.*}}) -> (tensor<1x10x2x4xf32>)
// CHECK:       %[[DV:.+]] = scf.forall ({{.*}}) in (1, 2, 3) shared_outs({{.*}}) -> (tensor<1x10x2x3xf32>)
// CHECK:       return %[[DQ]], %[[DK]], %[[DV]]
func.func @linear(%q: tensor<1x10x2x4xf32>, %k: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>) {
  %r:3 = hla.prefix_vjp #la (%q, %k, %v) cotangent(%v) : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>, tensor<1x10x2x3xf32>) -> (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x3xf32>
}
