// RUN: hla-opt %s --test-hla-chunk-plan="check=true print=false" --verify-diagnostics -o /dev/null

// Tests that the chunk plan derived from every shipped monoid (with and
// without decay and normalization) reproduces the monoid's own fold:
// summaries equal the fold of a chunk's tokens, readouts at every position
// equal the readout of (carried state ∘ chunk prefix).

func.func @plain(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-remark @+1 {{chunk plan of 'linear_attention' matches the fold}}
  %0 = hla.linear_attention %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'hla2' matches the fold}}
  %1 = hla.hla2 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'hla2_unmasked' matches the fold}}
  %2 = hla.hla2 %q, %q, %q {masked = false} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'ahla' matches the fold}}
  %3 = hla.ahla %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'hla3' matches the fold}}
  %4 = hla.hla3 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'linsimp' matches the fold}}
  %5 = hla.linsimp %q, %q, %q, %q, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

func.func @decayed_normalized(%q: tensor<1x8x2x4xf32>) {
  // expected-remark @+1 {{chunk plan of 'linear_attention' matches the fold}}
  %0 = hla.linear_attention %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'hla2' matches the fold}}
  %1 = hla.hla2 %q, %q, %q {decay = 0.9 : f64, normalize = true, ridge = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'hla2_unmasked' matches the fold}}
  %2 = hla.hla2 %q, %q, %q {decay = 0.7 : f64, masked = false, normalize = true, ridge = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'ahla' matches the fold}}
  %3 = hla.ahla %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{chunk plan of 'hla3' matches the fold}}
  %4 = hla.hla3 %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// KDA's transition is a matrix: it needs the WY chunked form, not this one.
func.func @kda(%q: tensor<1x8x2x4xf32>, %g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{no chunk plan for monoid 'kda': component 'M' has identity 'eye' but is not a scalar decay}}
  %0 = hla.kda %q, %q, %q, %q, %g : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4xf32>
  return
}
