// RUN: hla-opt %s --split-input-file --verify-diagnostics

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that the monoid is LinSimp's.
func.func @monoid(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{monoid 'la' needs inputs 'phi', 'v' and 'f' and readouts 'num' and 'den' (LinSimp's)}}
  %r:6 = hla.anchor_vjp #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv]) token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)> (%q, %k, %v, %q, %v) omega(%om) cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>)
  return
}

// -----

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that the window holds at least one anchor.
func.func @window(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{'window' must be >= 1, got 0}}
  %r:6 = hla.anchor_vjp #ls (%q, %k, %v, %q, %v) omega(%om) cotangent(%g) {window = 0 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>)
  return
}

// -----

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that the scale is positive.
func.func @scale(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{'scale' must be a finite positive number}}
  %r:6 = hla.anchor_vjp #ls (%q, %k, %v, %q, %v) omega(%om) cotangent(%g) {window = 4 : i64, scale = -1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>)
  return
}

// -----

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that every token operand has the query's heads (grouped heads are repeated before).
func.func @heads(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x1x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{'key' head count 1 differs from 'query' head count 2}}
  %r:6 = hla.anchor_vjp #ls (%q, %k, %v, %q, %v) omega(%om) cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>)
  return
}

// -----

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that omega's feature size is q's.
func.func @omega(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x5xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{'omega' feature size 5 differs from 'query' feature size 4}}
  %r:6 = hla.anchor_vjp #ls (%q, %k, %v, %q, %v) omega(%om) cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x5xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x5xf32>)
  return
}

// -----

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that the state is all five tensors.
func.func @init(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>, %m0: tensor<1x2x16x3xf32>, %a0: tensor<1x2x16xf32>) {
  // expected-error @+1 {{expects 5 init tensors (M, a, anchor_r, anchor_u, anchor_valid), got 2}}
  %r:8 = hla.anchor_vjp #ls (%q, %k, %v, %q, %v) omega(%om) init(%m0, %a0) cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x2x16x3xf32>, tensor<1x2x16xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x2x16x3xf32>, tensor<1x2x16xf32>)
  return
}

// -----

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that there is one gradient per operand.
func.func @gradients(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{needs one gradient per token operand and omega (6) and per init tensor (0), got 5}}
  %r:5 = hla.anchor_vjp #ls (%q, %k, %v, %q, %v) omega(%om) cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return
}

// -----

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>
// Tests that each gradient has its operand's type.
func.func @gradient_type(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{gradient #5 has type 'tensor<16x4xbf16>' but its operand has 'tensor<16x4xf32>'}}
  %r:6 = hla.anchor_vjp #ls (%q, %k, %v, %q, %v) omega(%om) cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xbf16>)
  return
}
