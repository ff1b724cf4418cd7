// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that the feature matrix is a static 2-D float tensor.
func.func @rank() {
  // expected-error @+1 {{'hla.random_features' op result must be a static [m, d] tensor of floats, got 'tensor<16xf32>'}}
  %o = hla.random_features : tensor<16xf32>
  return
}

// -----

func.func @dynamic() {
  // expected-error @+1 {{result must be a static [m, d] tensor of floats, got 'tensor<?x4xf32>'}}
  %o = hla.random_features : tensor<?x4xf32>
  return
}

// -----

func.func @integer() {
  // expected-error @+1 {{result must be a static [m, d] tensor of floats, got 'tensor<4x4xi32>'}}
  %o = hla.random_features : tensor<4x4xi32>
  return
}

// -----

// Tests that an empty matrix is refused.
func.func @empty() {
  // expected-error @+1 {{needs m >= 1 rows and d >= 1 columns, got 'tensor<0x4xf32>'}}
  %o = hla.random_features : tensor<0x4xf32>
  return
}

// -----

// Tests that a matrix too large to be a sensible constant is refused.
func.func @huge() {
  // expected-error @+1 {{at most 2^24 elements, got 33554432}}
  %o = hla.random_features : tensor<32768x1024xf32>
  return
}

// -----

// Tests that the seed is not negative.
func.func @seed() {
  // expected-error @+1 {{seed must be >= 0, got -1}}
  %o = hla.random_features {seed = -1 : i64} : tensor<4x4xf32>
  return
}
