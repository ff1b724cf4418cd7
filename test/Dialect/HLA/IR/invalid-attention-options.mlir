// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that a non-positive scale is rejected.
func.func @scale(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'scale' must be positive, got -1}}
  %o = hla.hla2 %q, %q, %q {scale = -1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that eps must be positive.
func.func @eps(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'eps' must be positive, got 0}}
  %o = hla.linear_attention %q, %q, %q {normalize = true, eps = 0.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that a decay of 0 is rejected (it must lie in (0, 1]).
func.func @decay_zero(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'decay' must be in (0, 1], got 0}}
  %o = hla.ahla %q, %q, %q {decay = 0.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that a decay above 1 is rejected.
func.func @decay_above_one(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'decay' must be in (0, 1], got 1.5}}
  %o = hla.hla3 %q, %q, %q {decay = 1.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that a negative ridge is rejected.
func.func @ridge(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'ridge' must be non-negative, got -5.000000e-01}}
  %o = hla.hla2 %q, %q, %q {ridge = -0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that a LinSimp window must hold at least the current token.
func.func @window(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{'window' must be at least 1, got 0}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega {window = 0 : i64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}
