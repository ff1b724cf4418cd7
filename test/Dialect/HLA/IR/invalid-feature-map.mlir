// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that omega is an [m, d] matrix.
func.func @omega_rank(%k: tensor<1x8x2x4xf32>, %omega: tensor<16xf32>) {
  // expected-error @+1 {{'omega' must have rank 2 [m, d], but has rank 1}}
  %phi = hla.feature_map %k, %omega : (tensor<1x8x2x4xf32>, tensor<16xf32>) -> tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that omega's columns match the input features.
func.func @features(%k: tensor<1x8x2x4xf32>, %omega: tensor<16x5xf32>) {
  // expected-error @+1 {{'omega' feature size 5 differs from 'input' feature size 4}}
  %phi = hla.feature_map %k, %omega : (tensor<1x8x2x4xf32>, tensor<16x5xf32>) -> tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that the output has one feature per row of omega.
func.func @output(%k: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'output' has shape [1, 8, 2, 4] but needs [1, 8, 2, 16]}}
  %phi = hla.feature_map %k, %omega : (tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that the scale is positive (its square root scales the input).
func.func @scale(%k: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'scale' must be positive, got 0}}
  %phi = hla.feature_map %k, %omega {scale = 0.0 : f64} : (tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x16xf32>
  return
}

// -----

// Tests that the input has a feature axis.
func.func @scalar_input(%x: tensor<f32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'input' must have rank >= 1}}
  %phi = hla.feature_map %x, %omega : (tensor<f32>, tensor<16x4xf32>) -> tensor<16xf32>
  return
}

// -----

// Tests that features are floats.
func.func @integer(%x: tensor<1x8x2x4xi32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'input' and 'output' must be float tensors}}
  %phi = hla.feature_map %x, %omega : (tensor<1x8x2x4xi32>, tensor<16x4xf32>) -> tensor<1x8x2x16xf32>
  return
}
