// RUN: hla-opt %s --split-input-file --hla-expand --hla-chunk --verify-diagnostics

#affine = #hla.monoid<"affine" inputs(q: [d], k: [d], v: [dv]) state(M: [d, d] eye, S: [d, dv])
  token(M = k * k.T, S = k * v.T) combine(M = M.b * M.a, S = M.b * S.a + S.b)
  readout(num = q.T * S)>

// Tests that a matrix-valued transition other than the gated delta rule's
// (which hla-chunk knows in its WY/UT form) is refused with the reason.
func.func @affine(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %m, %s = hla.segment #affine(%q, %q) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>)
  %p = hla.scan #affine(%m, %s) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4x4xf32>
  // expected-error @+1 {{hla-chunk: component 'M' has identity 'eye' but is not a scalar decay}}
  %o = hla.readout #affine(%q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}

// -----

// Tests that dynamic sequence lengths are refused with a diagnostic.
func.func @dynamic(%q: tensor<1x?x2x4xf32>) -> tensor<1x?x2x4xf32> {
  // expected-error @+1 {{hla-chunk: the chunked lowering needs static [B, T, H, ...] shapes}}
  %o = hla.hla2 %q, %q, %q : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>) -> tensor<1x?x2x4xf32>
  return %o : tensor<1x?x2x4xf32>
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that a readout of a state that is not an inclusive token scan is
// refused.
func.func @exclusive(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32> {
  %s = hla.scan exclusive #la(%p) : (tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4x4xf32>
  // expected-error @+1 {{hla-chunk: the readout's state must come from an inclusive hla.scan along axis 1}}
  %o = hla.readout #la(%q) state(%s) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}
