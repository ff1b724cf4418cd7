// RUN: hla-opt %s --split-input-file --hla-chunk="chunk-size=4 value-tile=2 parallel-gradients=true" --verify-diagnostics

#lan = #hla.monoid<"lan" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], m: [d])
  token(P = k * v.T, m = k) combine(P = P.a + P.b, m = m.a + m.b)
  readout(num = q.T * P, den = q.T * m)>

// Tests that value tiles are refused where the normalizer's gradient sums
// over every value column.
func.func @normalized(%q: tensor<1x5x2x4xf32>, %v: tensor<1x5x2x4xf32>) {
  // expected-error @+1 {{hla-chunk: value-tile 2: the backward cannot cut value columns (the normalizer's gradient sums over every value column)}}
  %r:3 = hla.prefix_vjp #lan (%q, %q, %v) cotangent(%v) : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>)
  return
}

// -----

#mix = #hla.monoid<"mix" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], S: [d, d])
  token(P = k * v.T, S = k * k.T) combine(P = P.a + P.b, S = S.a + S.b + P.a * P.b.T)
  readout(num = q.T * P)>

// Tests that value tiles are refused for a monoid whose rules mix value
// columns.
func.func @mixing(%q: tensor<1x5x2x4xf32>, %v: tensor<1x5x2x4xf32>) {
  // expected-error @+1 {{hla-chunk: value-tile 2: the backward cannot cut value columns (a rule of monoid 'mix' mixes value columns)}}
  %r:3 = hla.prefix_vjp #mix (%q, %q, %v) cotangent(%v) : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that a value tile must divide the value width.
func.func @ragged(%q: tensor<1x5x2x4xf32>, %v: tensor<1x5x2x3xf32>) {
  // expected-error @+1 {{hla-chunk: value-tile 2 must divide the value width 3}}
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x3xf32>, tensor<1x5x2x3xf32>) -> (tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x3xf32>)
  return
}
