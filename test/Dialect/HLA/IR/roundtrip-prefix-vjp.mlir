// RUN: hla-opt %s | hla-opt | FileCheck %s

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that hla.prefix_vjp prints and parses back, with its eps.
// CHECK-LABEL: func.func @vjp
// CHECK: hla.prefix_vjp #{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}) cotangent(%{{.*}}) {eps = 1.000000e-01 : f64}
func.func @vjp(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xbf16>, %g: tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xbf16>) {
  %dq, %dk, %dv = hla.prefix_vjp #la (%q, %k, %v) cotangent(%g) {eps = 0.1 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xbf16>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xbf16>)
  return %dq, %dk, %dv : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xbf16>
}

// Tests that hla.prefix_vjp with an initial state and the final state's
// cotangent prints and parses back; the init's gradients follow.
// CHECK-LABEL: func.func @vjp_states
// CHECK: hla.prefix_vjp #{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}) init(%{{.*}}) cotangent(%{{.*}}) final_cotangent(%{{.*}}) :
// CHECK-SAME: -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>)
func.func @vjp_states(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %s: tensor<1x2x4x3xf32>, %h: tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32> {
  %dq, %dk, %dv, %ds = hla.prefix_vjp #la (%q, %q, %v) init(%s) cotangent(%v) final_cotangent(%h) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>)
  return %ds : tensor<1x2x4x3xf32>
}
