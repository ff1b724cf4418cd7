// RUN: hla-opt %s --split-input-file --hla-derive-vjp --verify-diagnostics

// Tests that the function must be exactly one attention op.
// expected-error @+1 {{hla-derive-vjp: @main must return the output (and the final state) of one attention op and do nothing else}}
func.func @main(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %o = hla.linear_attention %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  %p = hla.linear_attention %o, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return %p : tensor<1x8x2x4xf32>
}

// -----

// Tests that one argument feeding two inputs is refused (its gradient would
// be a sum).
func.func @main(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  // expected-error @+1 {{hla-derive-vjp: the op's tensors and the initial state must be different arguments}}
  %o = hla.hla2 %q, %q, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}

// -----

// Tests that grouped K/V heads of a dynamic length are refused (k and v are
// repeated to the query heads in tensors of static shape).
func.func @main(%q: tensor<1x?x4x4xf32>, %k: tensor<1x?x2x4xf32>, %v: tensor<1x?x2x4xf32>) -> tensor<1x?x4x4xf32> {
  // expected-error @+1 {{hla-derive-vjp: grouped K/V heads need static shapes}}
  %o = hla.linear_attention %q, %k, %v : (tensor<1x?x4x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>) -> tensor<1x?x4x4xf32>
  return %o : tensor<1x?x4x4xf32>
}

// -----

// Tests that packed sequences are refused.
func.func @main(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>, %cu: tensor<3xi32>) -> tensor<1x8x2x4xf32> {
  // expected-error @+1 {{hla-derive-vjp: packed sequences are not differentiated yet}}
  %o = hla.linear_attention %q, %k, %v cu_seqlens(%cu) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<3xi32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}

// -----

// Tests that the final state must be returned as the op gives it.
// expected-error @+1 {{hla-derive-vjp: @main must return the output (and the final state) of one attention op and do nothing else}}
func.func @main(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %o, %s = hla.linear_attention %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x4x4xf32>)
  return %o : tensor<1x8x2x4xf32>
}

// -----

// Tests that a missing function is reported.
// expected-error @+1 {{hla-derive-vjp: no function @main with a body}}
module {
  func.func private @main(tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
}
