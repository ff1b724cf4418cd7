// RUN: hla-opt %s --hla-verify-algebra=remarks=true --verify-diagnostics -o /dev/null

// Tests that every shipped monoid, with and without decay and normalization,
// passes hla-verify-algebra: identity, associativity, Blelloch scan versus
// serial recurrence, and closure of the carried components.

func.func @plain(%q: tensor<1x8x2x4xf32>, %g: tensor<1x8x2xf32>, %omega: tensor<16x4xf32>) {
  // expected-remark @+1 {{monoid 'linear_attention' passed}}
  %0 = hla.linear_attention %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'hla2' passed}}
  %1 = hla.hla2 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'hla2_unmasked' passed}}
  %2 = hla.hla2 %q, %q, %q {masked = false} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'ahla' passed}}
  %3 = hla.ahla %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'hla3' passed}}
  %4 = hla.hla3 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'linsimp' passed}}
  %5 = hla.linsimp %q, %q, %q, %q, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'kda' passed}}
  %6 = hla.kda %q, %q, %q, %q, %g : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4xf32>
  return
}

func.func @decayed_normalized(%q: tensor<1x8x2x4xf32>) {
  // expected-remark @+1 {{monoid 'linear_attention' passed}}
  %0 = hla.linear_attention %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'hla2' passed}}
  %1 = hla.hla2 %q, %q, %q {decay = 0.9 : f64, normalize = true, ridge = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'hla2_unmasked' passed}}
  %2 = hla.hla2 %q, %q, %q {decay = 0.7 : f64, masked = false, normalize = true, ridge = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'ahla' passed}}
  %3 = hla.ahla %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  // expected-remark @+1 {{monoid 'hla3' passed}}
  %4 = hla.hla3 %q, %q, %q {decay = 0.9 : f64, normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}
