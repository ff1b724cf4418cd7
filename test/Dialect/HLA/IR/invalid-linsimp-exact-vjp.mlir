// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that the window holds at least one anchor.
func.func @window(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{'window' must be >= 1, got 0}}
  %r:5 = hla.linsimp_exact_vjp %q, %k, %v, %q, %v cotangent(%g) {window = 0 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return
}

// -----

// Tests that the anchor values have v's width.
func.func @width(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{'anchor_value' feature size 4 differs from 'value' feature size 3}}
  %r:5 = hla.linsimp_exact_vjp %q, %k, %v, %q, %q cotangent(%g) {window = 2 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

// Tests that each gradient has its operand's type.
func.func @gradient_type(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %g: tensor<1x8x2x3xf32>) {
  // expected-error @+1 {{gradient #2 has type 'tensor<1x8x2x3xbf16>' but its operand has 'tensor<1x8x2x3xf32>'}}
  %r:5 = hla.linsimp_exact_vjp %q, %k, %v, %q, %v cotangent(%g) {window = 2 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xbf16>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return
}
