// RUN: hla-opt %s --split-input-file --test-hla-chunk-plan="vjp=true check=true print=false" --verify-diagnostics -o /dev/null

// Tests that the backward of one chunk, derived from every shipped monoid's
// chunk plan and combine rule (with and without decay, normalization and
// ridge), agrees with central differences of ⟨g, readouts⟩ + ⟨λ, X₀ ∘ Σ⟩
// in every token input and in the carried-in state.

func.func @plain(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-remark @+1 {{backward of 'linear_attention' matches central differences}}
  %0 = hla.linear_attention %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'hla2' matches central differences}}
  %1 = hla.hla2 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'hla2_unmasked' matches central differences}}
  %2 = hla.hla2 %q, %q, %q {masked = false} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'ahla' matches central differences}}
  %3 = hla.ahla %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'hla3' matches central differences}}
  %4 = hla.hla3 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'linsimp' matches central differences}}
  %5 = hla.linsimp %q, %q, %q, %q, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

func.func @decayed_normalized(%q: tensor<1x8x2x4xf32>) {
  // expected-remark @+1 {{backward of 'linear_attention' matches central differences}}
  %0 = hla.linear_attention %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'hla2' matches central differences}}
  %1 = hla.hla2 %q, %q, %q {decay = 0.9 : f64, normalize = true, ridge = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'hla2_unmasked' matches central differences}}
  %2 = hla.hla2 %q, %q, %q {decay = 0.7 : f64, masked = false, normalize = true, ridge = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'ahla' matches central differences}}
  %3 = hla.ahla %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{backward of 'hla3' matches central differences}}
  %4 = hla.hla3 %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// A monoid of its own: a scalar per-token weight read by a scalar readout
// differentiates like any other input.
func.func @scalar_weight() attributes {hla.monoid = #hla.monoid<"weighted"
    inputs(q: [d], k: [d], w: []) state(m: [d]) token(m = w * k)
    combine(m = m.a + m.b) readout(num = q.T * m)>} {
  // expected-remark @-3 {{backward of 'weighted' matches central differences}}
  return
}

// -----

// Its gradient in a matrix-valued term would be a trace: not derived.
// expected-error @+1 {{no backward for monoid 'gated': the gradient of scalar token input 'b' in a matrix-valued term is a trace}}
func.func @scalar_gate() attributes {hla.monoid = #hla.monoid<"gated"
    inputs(q: [d], k: [d], v: [dv], b: []) state(P: [d, dv])
    token(P = b * k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>} {
  return
}

// -----

// KDA's transition is a matrix: no chunk plan, so no derived backward yet.
func.func @kda(%q: tensor<1x8x2x4xf32>, %g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{no backward for monoid 'kda': component 'M' has identity 'eye' but is not a scalar decay}}
  %0 = hla.kda %q, %q, %q, %q, %g : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4xf32>
  return
}
