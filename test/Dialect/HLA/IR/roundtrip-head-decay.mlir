// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that a decay rate per query head round-trips: the attention ops'
// `head_decay` tensor, a monoid parameter `per_head`, and the `head_params`
// of hla.segment and hla.prefix_vjp.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = per_head)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @linear_attention
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<4xf32>
// CHECK: hla.linear_attention %{{.+}}, %{{.+}}, %{{.+}} head_decay(%[[G]]) {normalize = true}
// CHECK-SAME: (tensor<1x8x4x8xf32>, tensor<1x8x2x8xf32>, tensor<1x8x2x6xf32>, tensor<4xf32>) -> tensor<1x8x4x6xf32>
func.func @linear_attention(%q: tensor<1x8x4x8xf32>, %k: tensor<1x8x2x8xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<4xf32>) -> tensor<1x8x4x6xf32> {
  %o = hla.linear_attention %q, %k, %v head_decay(%g) {normalize = true} : (tensor<1x8x4x8xf32>, tensor<1x8x2x8xf32>, tensor<1x8x2x6xf32>, tensor<4xf32>) -> tensor<1x8x4x6xf32>
  return %o : tensor<1x8x4x6xf32>
}

// CHECK-LABEL: func.func @hla3_state
// CHECK: hla.hla3 %{{.+}}, %{{.+}}, %{{.+}} initial_state(%{{.+}}, %{{.+}}, %{{.+}}) head_decay(%{{.+}}) :
func.func @hla3_state(%q: tensor<1x8x2x4xbf16>, %s: tensor<1x2x4x4xf32>, %p: tensor<1x2x4x4xf32>, %x: tensor<1x2x4x4xf32>, %g: tensor<2xf32>) -> tensor<1x8x2x4xbf16> {
  %o = hla.hla3 %q, %q, %q initial_state(%s, %p, %x) head_decay(%g) : (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2xf32>) -> tensor<1x8x2x4xbf16>
  return %o : tensor<1x8x2x4xbf16>
}

// CHECK-LABEL: func.func @segment
// CHECK: hla.segment #{{.+}}(%{{.+}}, %{{.+}}) head_params(%{{.+}}) : (tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<2xf32>) -> (tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>)
func.func @segment(%k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<2xf32>) -> (tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>) {
  %p, %rho = hla.segment #la(%k, %v) head_params(%g) : (tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<2xf32>) -> (tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>)
  return %p, %rho : tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>
}

// CHECK-LABEL: func.func @prefix_vjp
// CHECK: hla.prefix_vjp #{{.+}}(%{{.+}}, %{{.+}}, %{{.+}}) cotangent(%{{.+}}) head_params(%{{.+}}) :
func.func @prefix_vjp(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %do: tensor<1x8x2x6xf32>, %g: tensor<2xf32>) -> tensor<1x8x2x4xf32> {
  %dq, %dk, %dv, %dg = hla.prefix_vjp #la(%q, %q, %v) cotangent(%do) head_params(%g) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x8x2x6xf32>, tensor<2xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<2xf32>)
  return %dq : tensor<1x8x2x4xf32>
}
