// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that an op takes its decay as an attribute or a tensor, not both.
func.func @both(%q: tensor<1x8x2x4xf32>, %g: tensor<2xf32>) {
  // expected-error @+1 {{takes the decay as the 'decay' attribute or as the 'head_decay' tensor, not both}}
  %o = hla.linear_attention %q, %q, %q head_decay(%g) {decay = 0.9 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<2xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that head_decay has one rate per query head.
func.func @heads(%q: tensor<1x8x4x4xf32>, %k: tensor<1x8x2x4xf32>, %g: tensor<2xf32>) {
  // expected-error @+1 {{'head_decay' must be a [H_q] f32 tensor (one rate per query head), H_q = 4, got 'tensor<2xf32>'}}
  %o = hla.hla2 %q, %k, %k head_decay(%g) : (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<2xf32>) -> tensor<1x8x4x4xf32>
  return
}

// -----

// Tests that head_decay is f32.
func.func @element(%q: tensor<1x8x2x4xbf16>, %g: tensor<2xbf16>) {
  // expected-error @+1 {{'head_decay' must be a [H_q] f32 tensor (one rate per query head), H_q = 2, got 'tensor<2xbf16>'}}
  %o = hla.ahla %q, %q, %q head_decay(%g) : (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<2xbf16>) -> tensor<1x8x2x4xbf16>
  return
}

// -----

#la = #hla.monoid<"la" inputs(k: [d], v: [dv]) params(gamma = per_head)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b)>

// Tests that hla.segment needs the values of the monoid's per-head
// parameters.
func.func @segment_missing(%k: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{monoid 'la' has 1 per-head parameter(s), got 0 'head_params' tensor(s)}}
  %p, %rho = hla.segment #la(%k, %k) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(k: [d], v: [dv]) params(gamma = per_head)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b)>

// Tests that hla.segment's per-head values have one value per result head.
func.func @segment_heads(%k: tensor<1x8x2x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{per-head parameter 'gamma' needs a [2] f32 tensor (one value per head), got 'tensor<3xf32>'}}
  %p, %rho = hla.segment #la(%k, %k) head_params(%g) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<3xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>)
  return
}

// -----

// Tests that only token rules read a per-head parameter (the combine rules
// are evaluated by ops that have no per-head values).
// expected-error @+1 {{monoid combine rule for 'P' reads per-head parameter 'gamma'; only token rules may}}
func.func @combine() attributes {m = #hla.monoid<"bad" inputs(k: [d], v: [dv]) params(gamma = per_head) state(P: [d, dv]) token(P = k * v.T) combine(P = gamma * P.a + P.b)>}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = per_head)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that hla.prefix_vjp returns the gradient of its per-head values too.
func.func @vjp_rates(%q: tensor<1x8x2x4xf32>, %g: tensor<2xf32>) {
  // expected-error @+1 {{needs one gradient per input (3), per init tensor (0) and per head_params tensor (1), got 3}}
  %dq, %dk, %dv = hla.prefix_vjp #la(%q, %q, %q) cotangent(%q) head_params(%g) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<2xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
  return
}
