// RUN: hla-opt %s --split-input-file --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the monoid reads an anchor feature `f` in `num` and `den`.
func.func @monoid(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>, %p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{monoid 'la' needs readouts 'num' and 'den' of an input 'f' (the anchor feature)}}
  %o = hla.anchor_readout #la(%q, %q, %q) omega(%omega) state(%p) {window = 4 : i64, scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>, tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#ls = #hla.monoid<"ls" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>

// Tests that the state holds the carried moments.
func.func @state(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>, %m: tensor<1x8x2x16x4xf32>) {
  // expected-error @+1 {{monoid 'ls' carries 2 components, got 1 state tensors}}
  %o = hla.anchor_readout #ls(%q, %q, %q) omega(%omega) state(%m) {window = 4 : i64, scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>, tensor<1x8x2x16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#ls = #hla.monoid<"ls" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>

// Tests that the moments have one feature per row of omega.
func.func @features(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>, %m: tensor<1x8x2x8x4xf32>, %a: tensor<1x8x2x8xf32>) {
  // expected-error @+1 {{state #0: 'M' has m = 8 but m = 16 elsewhere}}
  %o = hla.anchor_readout #ls(%q, %q, %q) omega(%omega) state(%m, %a) {window = 4 : i64, scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>, tensor<1x8x2x8x4xf32>, tensor<1x8x2x8xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#ls = #hla.monoid<"ls" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>

// Tests that incoming anchors are the last W-1 rows.
func.func @anchors(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>, %m: tensor<1x8x2x16x4xf32>, %a: tensor<1x8x2x16xf32>, %ar: tensor<1x2x4x4xf32>, %av: tensor<1x2x3xf32>) {
  // expected-error @+1 {{'anchors' #0 (anchor_r) has shape [1, 2, 4, 4] but the state needs [1, 2, 3, 4]}}
  %o = hla.anchor_readout #ls(%q, %q, %q) omega(%omega) state(%m, %a) anchors(%ar, %ar, %av) {window = 4 : i64, scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>, tensor<1x8x2x16x4xf32>, tensor<1x8x2x16xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x3xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#ls = #hla.monoid<"ls" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>

// Tests that the output has the anchor values' features.
func.func @output(%q: tensor<1x8x2x4xf32>, %u: tensor<1x8x2x6xf32>, %omega: tensor<16x4xf32>, %m: tensor<1x8x2x16x6xf32>, %a: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'output' has shape [1, 8, 2, 4] but needs [1, 8, 2, 6]}}
  %o = hla.anchor_readout #ls(%q, %q, %u) omega(%omega) state(%m, %a) {window = 4 : i64, scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<16x4xf32>, tensor<1x8x2x16x6xf32>, tensor<1x8x2x16xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

#ls = #hla.monoid<"ls" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>

// Tests that omega's columns match the query features.
func.func @omega(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x5xf32>, %m: tensor<1x8x2x16x4xf32>, %a: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'omega' feature size 5 differs from 'query' feature size 4}}
  %o = hla.anchor_readout #ls(%q, %q, %q) omega(%omega) state(%m, %a) {window = 4 : i64, scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x5xf32>, tensor<1x8x2x16x4xf32>, tensor<1x8x2x16xf32>) -> tensor<1x8x2x4xf32>
  return
}
