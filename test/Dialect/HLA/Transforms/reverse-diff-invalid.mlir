// RUN: hla-opt %s --split-input-file --test-hla-reverse-diff --verify-diagnostics

// Tests that an input read through a map that is not a projection of the
// loops is refused (its cotangent would be a scatter).
#shift = affine_map<(i, j) -> (i + j)>
#o = affine_map<(i, j) -> (i, j)>
func.func @shifted(%x: tensor<8xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  // expected-error @+1 {{reverse differentiation: input 0's indexing map affine_map<(d0, d1) -> (d0 + d1)> is not a projection of the loops}}
  %y = linalg.generic {indexing_maps = [#shift, #o], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Tests that an op without a rule on the path is named.
func.func @padded(%x: tensor<4xf32>) -> tensor<6xf32> {
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{reverse differentiation: no rule for 'tensor.pad'}}
  %y = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %z : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// Tests that a body using its output other than by adding to it is refused.
#id = affine_map<(i) -> (i)>
#all = affine_map<(i) -> ()>
func.func @product(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{reverse differentiation: the body must add to its output or not read it}}
  %y = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %acc, %a : f32
    linalg.yield %p : f32
  } -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// Tests that a float op of the body without a derivative is named.
#id = affine_map<(i) -> (i)>
func.func @sine(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{reverse differentiation: no derivative for 'math.sin'}}
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = math.sin %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that a generic with two results is refused.
#id = affine_map<(i) -> (i)>
func.func @pair(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{reverse differentiation: a generic with 2 results (one is differentiated)}}
  %y:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e, %e : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %o0: f32, %o1: f32):
    linalg.yield %a, %a : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %y#0 : tensor<4xf32>
}
