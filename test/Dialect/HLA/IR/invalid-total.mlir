// RUN: hla-opt %s --split-input-file --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that a total takes and returns every component (rho too: it is not
// carried, but a later combine reads it).
func.func @components(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{monoid 'la' has 2 components, got 2 segments and 1 results}}
  %P = hla.total #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that the results drop the combined axis.
func.func @keeps_axis(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{result #0 ('P') has shape [1, 8, 2, 4, 4] but needs [1, 2, 4, 4]}}
  %P, %r = hla.total #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x2xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that the axis is a leading dimension.
func.func @axis(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'axis' 3 is not a leading dimension (there are 3)}}
  %P, %r = hla.total #la(%p, %rho) {axis = 3 : i64} : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that a total keeps its segments' element type.
func.func @element(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) {
  // expected-error @+1 {{result #1 ('rho') element type 'f16' differs from its segment's 'f32'}}
  %P, %r = hla.total #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf16>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that packed totals are one per sequence.
func.func @packed(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>, %cu: tensor<4xi32>) {
  // expected-error @+1 {{result #0 ('P') has shape [1, 2, 4, 4] but needs [3, 2, 4, 4]}}
  %P, %r = hla.total #la(%p, %rho) cu_seqlens(%cu) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>, tensor<4xi32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
  return
}
