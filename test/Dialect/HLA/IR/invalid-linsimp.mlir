// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that anchor keys must be [B, T, H, D].
func.func @anchor_key_rank(%q: tensor<1x8x2x4xf32>, %r: tensor<8x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'anchor_key' must have rank 4 [B, T, H, D], but has rank 3}}
  %o = hla.linsimp %q, %q, %q, %r, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that anchor keys pair with keys token for token.
func.func @anchor_key_length(%q: tensor<1x8x2x4xf32>, %r: tensor<1x7x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'anchor_key' sequence length 7 differs from 'key' sequence length 8}}
  %o = hla.linsimp %q, %q, %q, %r, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x7x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that anchor values have the values' feature size.
func.func @anchor_value_features(%q: tensor<1x8x2x4xf32>, %u: tensor<1x8x2x6xf32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'anchor_value' feature size 6 differs from 'value' feature size 4}}
  %o = hla.linsimp %q, %q, %q, %q, %u, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that the anchors share the keys' element type.
func.func @anchor_type(%q: tensor<1x8x2x4xf32>, %r: tensor<1x8x2x4xf16>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'anchor_key' element type 'f16' differs from 'key' element type 'f32'}}
  %o = hla.linsimp %q, %q, %q, %r, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf16>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that omega must be an [m, d] matrix.
func.func @omega_rank(%q: tensor<1x8x2x4xf32>, %omega: tensor<4x16x4xf32>) {
  // expected-error @+1 {{'omega' must have rank 2 [m, d], but has rank 3}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<4x16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that omega's columns match the key features.
func.func @omega_features(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x8xf32>) {
  // expected-error @+1 {{'omega' feature size 8 differs from 'key' feature size 4}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x8xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that omega shares the keys' element type.
func.func @omega_type(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xbf16>) {
  // expected-error @+1 {{'omega' element type 'bf16' differs from 'key' element type 'f32'}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xbf16>) -> tensor<1x8x2x4xf32>
  return
}
