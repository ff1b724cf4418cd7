// RUN: hla-opt %s --split-input-file --verify-diagnostics

#plain = #hla.monoid<"plain" inputs(q: [d]) state(P: [d, dv]) combine(P = P.a + P.b) readout(den = q.T * P)>

// Tests that hla.readout needs a `num` readout.
func.func @no_num(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{monoid 'plain' has no 'num' readout}}
  %o = hla.readout #plain(%q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that hla.readout takes the inputs its rules read.
func.func @inputs(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{monoid 'la' readouts read 1 inputs (q), got 2}}
  %o = hla.readout #la(%q, %q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], m: [d])
  token(P = k * v.T, m = k) combine(P = P.a + P.b, m = m.a + m.b) readout(num = q.T * P, den = q.T * m)>

// Tests that hla.readout takes the carried components.
func.func @state(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{monoid 'la' carries 2 components (P, m), got 1 state tensors}}
  %o = hla.readout #la(%q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the output has the `num` readout's shape.
func.func @output(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x6xf32>) {
  // expected-error @+1 {{'output' has shape [1, 8, 2, 4] but needs [1, 8, 2, 6]}}
  %o = hla.readout #la(%q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x6xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the stabiliser is positive.
func.func @eps(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{'eps' must be positive, got -1}}
  %o = hla.readout #la(%q) state(%p) {eps = -1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the output is a float tensor.
func.func @output_type(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{'output' must be a float tensor}}
  %o = hla.readout #la(%q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xi32>
  return
}
