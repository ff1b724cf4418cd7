// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand turns an attention op's head_decay tensor into the
// monoid's per-head decay rate (`gamma = per_head`, its ρ component kept)
// and hands the tensor to hla.segment as the rate's values; scan and readout
// read no rate.

// CHECK-DAG: #[[$M:linear_attention[_0-9]*]] = #hla.monoid<"linear_attention" inputs(q: [d], k: [d], v: [dv]) params(gamma = per_head) state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma) combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>
// CHECK-DAG: #[[$H3:hla3[_0-9]*]] = #hla.monoid<"hla3" {{.*}}params(gamma = per_head){{.*}}Q2 = gamma * q * q.T

// CHECK-LABEL: func.func @linear_attention
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x2x4xf32>, %[[K:.+]]: tensor<1x8x2x4xf32>, %[[V:.+]]: tensor<1x8x2x6xf32>, %[[G:.+]]: tensor<2xf32>)
// CHECK: %[[SEG:.+]]:2 = hla.segment #[[$M]](%[[K]], %[[V]]) head_params(%[[G]])
// CHECK: %[[PS:.+]] = hla.scan #[[$M]](%[[SEG]]#0, %[[SEG]]#1) :
// CHECK: hla.readout #[[$M]](%[[Q]]) state(%[[PS]])
func.func @linear_attention(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<2xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.linear_attention %q, %k, %v head_decay(%g) {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<2xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}

// CHECK-LABEL: func.func @hla3
// CHECK: hla.segment #[[$H3]](%{{.+}}, %{{.+}}, %{{.+}}) head_params(%{{.+}})
func.func @hla3(%q: tensor<1x8x2x4xf32>, %g: tensor<2xf32>) -> tensor<1x8x2x4xf32> {
  %o = hla.hla3 %q, %q, %q head_decay(%g) {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<2xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}
