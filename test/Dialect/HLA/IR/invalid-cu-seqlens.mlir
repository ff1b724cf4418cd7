// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that cu_seqlens must be a rank-1 integer tensor.
func.func @type(%q: tensor<1x8x2x4xf32>, %cu: tensor<3xf32>) {
  // expected-error @+1 {{'cu_seqlens' must be a rank-1 tensor of i32 or i64, got 'tensor<3xf32>'}}
  %o = hla.hla2 %q, %q, %q cu_seqlens(%cu) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<3xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that cu_seqlens must describe at least one sequence.
func.func @length(%q: tensor<1x8x2x4xf32>, %cu: tensor<1xi32>) {
  // expected-error @+1 {{'cu_seqlens' needs at least 2 offsets (one sequence), got 1}}
  %o = hla.hla2 %q, %q, %q cu_seqlens(%cu) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1xi32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that packed sequences live in a batch of one.
func.func @batch(%q: tensor<2x8x2x4xf32>, %cu: tensor<3xi64>) {
  // expected-error @+1 {{with 'cu_seqlens' the batch size must be 1 (sequences are packed along T), got 2}}
  %o = hla.hla2 %q, %q, %q cu_seqlens(%cu) : (tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<3xi64>) -> tensor<2x8x2x4xf32>
  return
}
