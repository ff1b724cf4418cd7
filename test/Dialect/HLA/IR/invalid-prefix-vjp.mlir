// RUN: hla-opt %s --split-input-file --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that every input of the monoid is an operand.
func.func @inputs(%q: tensor<1x8x2x4xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{monoid 'la' has 3 inputs, got 2}}
  %r:2 = hla.prefix_vjp #la (%q, %q) cotangent(%g) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that there is one gradient per input.
func.func @results(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{needs one gradient per input (3), per init tensor (0) and per head_params tensor (0), got 2}}
  %r:2 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that a gradient has its input's type.
func.func @gradient_type(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{gradient #2 has type 'tensor<1x8x2x3xbf16>' but its input has 'tensor<1x8x2x3xf32>'}}
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xbf16>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the inputs agree on the key dimension d.
func.func @symbol(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x5xf32>, %v: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{input #1: 'k' has d = 5 but d = 4 elsewhere}}
  %r:3 = hla.prefix_vjp #la (%q, %k, %v) cotangent(%v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x5xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x5xf32>, tensor<1x8x2x3xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the cotangent is shaped like the readout's output [B, T, H, dv].
func.func @cotangent(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{'cotangent' has shape [1, 8, 2, 4] but the readout's output has [1, 8, 2, 3]}}
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%q) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the inputs are [B, T, H, ...]: no more, no fewer leading dims.
func.func @lead(%q: tensor<2x1x8x2x4xf32>, %v: tensor<2x1x8x2x3xf32>) {
  // expected-error @+1 {{input #0 ('q') needs exactly 3 leading dimensions [B, T, H]}}
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) : (tensor<2x1x8x2x4xf32>, tensor<2x1x8x2x4xf32>, tensor<2x1x8x2x3xf32>, tensor<2x1x8x2x3xf32>) -> (tensor<2x1x8x2x4xf32>, tensor<2x1x8x2x4xf32>, tensor<2x1x8x2x3xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that every input has the same [B, T, H] (no grouped K/V heads yet).
func.func @grouped(%q: tensor<1x8x4x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %g: tensor<1x8x4x3xf32>) {
  // expected-error @+1 {{input #1 ('k') has leading shape [1, 8, 2] but the others have [1, 8, 4]}}
  %r:3 = hla.prefix_vjp #la (%q, %k, %v) cotangent(%g) : (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x4x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that an initial state is the carried components, [B, H, ...] f32.
func.func @init_shape(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %s: tensor<1x2x3x4xf32>) {
  // expected-error @+1 {{init #0 ('P') has type 'tensor<1x2x3x4xf32>' but needs [1, 2, 4, 3] of f32}}
  %r:4 = hla.prefix_vjp #la (%q, %q, %v) init(%s) cotangent(%v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x3x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x2x3x4xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the final state's cotangent has one tensor per carried component.
func.func @final_count(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %h: tensor<1x2x4x3xf32>) {
  // expected-error @+1 {{expects 1 final_cotangent tensors (P), got 2}}
  %r:3 = hla.prefix_vjp #la (%q, %q, %v) cotangent(%v) final_cotangent(%h, %h) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return
}
