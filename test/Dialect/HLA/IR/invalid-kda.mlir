// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that the log-decay g must be [B, T, H, dk].
func.func @g_rank(%q: tensor<1x8x2x4xf32>, %g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'g' must have rank 4 [B, T, H, dk], but has rank 3}}
  %o = hla.kda %q, %q, %q, %g, %g : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that g has the keys' shape.
func.func @g_shape(%q: tensor<1x8x2x4xf32>, %g: tensor<1x8x2x8xf32>, %beta: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'g' feature size 8 differs from 'key' feature size 4}}
  %o = hla.kda %q, %q, %q, %g, %beta : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x8xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that beta is one scalar per token and head, [B, T, H].
func.func @beta_rank(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'beta' must have rank 3 [B, T, H], but has rank 4}}
  %o = hla.kda %q, %q, %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that beta has the keys' heads.
func.func @beta_heads(%q: tensor<1x8x2x4xf32>, %beta: tensor<1x8x4xf32>) {
  // expected-error @+1 {{'beta' head count 4 differs from 'key' head count 2}}
  %o = hla.kda %q, %q, %q, %q, %beta : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that g shares the keys' element type.
func.func @g_type(%q: tensor<1x8x2x4xf32>, %g: tensor<1x8x2x4xf16>, %beta: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'g' element type 'f16' differs from 'key' element type 'f32'}}
  %o = hla.kda %q, %q, %q, %g, %beta : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf16>, tensor<1x8x2xf32>) -> tensor<1x8x2x4xf32>
  return
}
