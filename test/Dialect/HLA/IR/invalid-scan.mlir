// RUN: hla-opt %s --split-input-file --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that a scan takes every component.
func.func @segments(%p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{monoid 'la' has 2 components, got 1 segments}}
  %s = hla.scan #la(%p) : (tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that a scan returns the carried components (P; rho is only read
// from the right operand), optionally twice.
func.func @results(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{expects 1 results (carried: P), or 2 with final states, got 3}}
  %s:3 = hla.scan #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>)
  return
}

// -----

#plain = #hla.monoid<"plain" state(P: [d, dv]) combine(P = P.a + P.b)>

// Tests that a monoid without readouts carries nothing to scan.
func.func @no_readout(%p: tensor<1x8x2x4x4xf32>) {
  // expected-error @+1 {{monoid 'plain' carries no components (it has no readout)}}
  %s = hla.scan #plain(%p) : (tensor<1x8x2x4x4xf32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that the initial state holds the carried components.
func.func @init_count(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>, %p0: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{expects 1 init tensors (P), got 2}}
  %s = hla.scan #la(%p, %rho) init(%p0, %p0) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that the axis is a leading dimension.
func.func @axis(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'axis' 3 is not a leading dimension (there are 3)}}
  %s = hla.scan #la(%p, %rho) {axis = 3 : i64} : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that packed sequences are scanned along axis 1.
func.func @packed_axis(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{'cu_seqlens' needs 'axis' = 1, got 0}}
  %s = hla.scan #la(%p, %rho) cu_seqlens(%cu) {axis = 0 : i64} : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>, tensor<3xi32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that prefix results have the segments' shape.
func.func @prefix_shape(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{prefix result #0 ('P') has shape [1, 7, 2, 4, 4] but needs [1, 8, 2, 4, 4]}}
  %s = hla.scan #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> tensor<1x7x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that final states drop the scan axis.
func.func @final_shape(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{final result #0 ('P') has shape [1, 8, 2, 4, 4] but needs [1, 2, 4, 4]}}
  %s:2 = hla.scan #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that with cu_seqlens the initial state is per sequence.
func.func @init_packed(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>, %p0: tensor<1x2x4x4xf32>, %cu: tensor<4xi32>) {
  // expected-error @+1 {{init #0 ('P') has shape [1, 2, 4, 4] but needs [3, 2, 4, 4]}}
  %s = hla.scan #la(%p, %rho) init(%p0) cu_seqlens(%cu) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>, tensor<1x2x4x4xf32>, tensor<4xi32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that results keep the segments' element type.
func.func @element_type(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{prefix result #0 ('P') element type 'f16' differs from its segment's 'f32'}}
  %s = hla.scan #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4x4xf16>
  return
}
