// RUN: hla-opt %s --hla-chunk="chunk-size=4 form=segmented segments=2 value-tile=2" --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the backward's runs and value tiles are not combined.
func.func @runs_and_tiles(%q: tensor<1x16x2x4xf32>, %v: tensor<1x16x2x4xf32>) {
  // expected-error @+1 {{hla-chunk: value-tile 2 needs whole sequences; the backward runs in 2 runs}}
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x16x2x4xf32>, tensor<1x16x2x4xf32>, tensor<1x16x2x4xf32>, tensor<1x16x2x4xf32>) -> (tensor<1x16x2x4xf32>, tensor<1x16x2x4xf32>, tensor<1x16x2x4xf32>)
  return
}
