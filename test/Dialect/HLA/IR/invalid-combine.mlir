// RUN: hla-opt %s --split-input-file --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], m: [d])
  token(P = k * v.T, m = k) combine(P = P.a + P.b, m = m.a + m.b) readout(num = q.T * P)>

// Tests that both operands and the results hold every component.
func.func @count(%p: tensor<2x4x4xf32>, %m: tensor<2x4xf32>) {
  // expected-error @+1 {{monoid 'la' has 2 components, but got 2 lhs, 1 rhs and 2 results}}
  %r:2 = hla.combine #la(%p, %m), (%p) : (tensor<2x4x4xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], m: [d])
  token(P = k * v.T, m = k) combine(P = P.a + P.b, m = m.a + m.b) readout(num = q.T * P)>

// Tests that a component has one type on both sides and in the result.
func.func @types(%p: tensor<2x4x4xf32>, %m: tensor<2x4xf32>, %p3: tensor<3x4x4xf32>) {
  // expected-error @+1 {{component #0 ('P') has lhs 'tensor<2x4x4xf32>', rhs 'tensor<3x4x4xf32>' and result 'tensor<2x4x4xf32>'; all three must match}}
  %r:2 = hla.combine #la(%p, %m), (%p3, %m) : (tensor<2x4x4xf32>, tensor<2x4xf32>, tensor<3x4x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4xf32>)
  return
}
