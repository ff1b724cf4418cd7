// RUN: hla-opt %s --hla-chunk="chunk-size=4 form=segmented segments=3 parallel-gradients=true" | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests the derived backward's passes over chunks in runs (22 tokens, 6
// chunks of 4, 3 runs of 2): 1a. every run's total, per (batch entry,
// head, run); 1b. each run folds the totals before it (a loop up to its
// index) and saves the states entering its chunks into its slots of the
// stack; 2a. every run's β, a reverse pass from zero; 2b. each run folds,
// from the last run back, the runs after it (each one's total through the
// transposed combine, plus its β) and saves λ into its slots; 3. the
// gradients, parallel over chunks.
// CHECK:       module attributes {hla.chunking = ["la backward: parallel gradients, the sequential passes in 3 runs of 2 chunks"]}
// CHECK-LABEL: func.func @linear
// CHECK:       %[[TOTALS:.+]] = scf.forall (%{{.*}}, %{{.*}}, %[[R:[^ ]+]]) in (1, 2, 3) shared_outs({{.*}}) -> (tensor<1x2x3x4x3xf32>)
// CHECK:         %[[LO:.+]] = arith.muli %[[R]], %c2
// CHECK:         scf.for %{{.*}} = %[[LO]] to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<4x3xf32>)
// CHECK:           hla.combine
// CHECK:       %[[STATES:.+]] = scf.forall (%{{.*}}, %{{.*}}, %[[R1:[^ ]+]]) in (1, 2, 3) shared_outs(%[[OUT:[^ ]+]] = %{{.*}}) -> (tensor<1x2x24x3xf32>)
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[R1]] step %c1
// CHECK:           tensor.extract_slice %[[TOTALS]]
// CHECK:         tensor.extract_slice %[[OUT]][{{.*}}, {{.*}}, %{{.*}}, 0] [1, 1, 8, 3]
// CHECK:         scf.for {{.*}} -> (tensor<4x3xf32>, tensor<8x3xf32>)
// CHECK:       %[[BETAS:.+]] = scf.forall ({{.*}}) in (1, 2, 3) shared_outs({{.*}}) -> (tensor<1x2x3x4x3xf32>)
// CHECK:         scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK:           tensor.extract_slice %[[STATES]]
// CHECK:       %[[LAMBDAS:.+]] = scf.forall ({{.*}}) in (1, 2, 3) shared_outs({{.*}}) -> (tensor<1x2x24x3xf32>)
// CHECK:         scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK:           tensor.extract_slice %[[STATES]]
// CHECK:           tensor.extract_slice %[[TOTALS]]
// CHECK:           hla.combine
// CHECK:           tensor.extract_slice %[[BETAS]]
// CHECK:         scf.for {{.*}} -> (tensor<4x3xf32>, tensor<8x3xf32>)
// CHECK:       scf.forall ({{.*}}) in (1, 2, 6) shared_outs({{.*}}) -> (tensor<1x22x2x4xf32>, tensor<1x22x2x4xf32>, tensor<1x22x2x3xf32>)
// CHECK:         tensor.extract_slice %[[LAMBDAS]]
// CHECK-NOT:   hla.prefix_vjp
func.func @linear(%q: tensor<1x22x2x4xf32>, %v: tensor<1x22x2x3xf32>) -> (tensor<1x22x2x4xf32>, tensor<1x22x2x4xf32>, tensor<1x22x2x3xf32>) {
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x22x2x4xf32>, tensor<1x22x2x4xf32>, tensor<1x22x2x3xf32>, tensor<1x22x2x3xf32>) -> (tensor<1x22x2x4xf32>, tensor<1x22x2x4xf32>, tensor<1x22x2x3xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x22x2x4xf32>, tensor<1x22x2x4xf32>, tensor<1x22x2x3xf32>
}
