// RUN: hla-opt %s --split-input-file --hla-chunk="chunk-size=4" --verify-diagnostics

// Tests that a matrix-valued transition (KDA's kind) has no derived
// backward yet: its chunk plan does not exist.
#mat = #hla.monoid<"mat" inputs(q: [d], k: [d], v: [dv])
  state(M: [d, d] eye, S: [d, dv]) token(M = k * k.T, S = k * v.T)
  combine(M = M.b * M.a, S = M.b * S.a + S.b) readout(num = q.T * S)>
func.func @matrix_transition(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{hla-chunk: component 'M' has identity 'eye' but is not a scalar decay}}
  %r:3 = hla.prefix_vjp #mat (%q, %q, %v) cotangent(%v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that dynamic shapes are refused by the lowering.
func.func @dynamic(%q: tensor<1x?x2x4xf32>, %v: tensor<1x?x2x3xf32>) {
  // expected-error @+1 {{hla-chunk: the chunked backward needs static shapes}}
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x3xf32>, tensor<1x?x2x3xf32>) -> (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x3xf32>)
  return
}
