// RUN: hla-opt %s --hla-share-tile-products | FileCheck %s

// Tests what hla-share-tile-products keeps: a product accumulated onto
// another fill (ones, not zeros) computes other values, and a product inside
// a conditional region does not dominate the one after it.

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @other_fill
// CHECK-COUNT-2: iterator_types = ["parallel", "parallel", "reduction"]
func.func @other_fill(%x: tensor<4x8xf32>, %y: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<4x3xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z0 : tensor<4x3xf32>) {
  ^bb0(%u: f32, %w: f32, %o: f32):
    %m = arith.mulf %u, %w : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %e1 = tensor.empty() : tensor<4x3xf32>
  %z1 = linalg.fill ins(%one : f32) outs(%e1 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %p2 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z1 : tensor<4x3xf32>) {
  ^bb0(%u: f32, %w: f32, %o: f32):
    %m = arith.mulf %u, %w : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %p, %p2 : tensor<4x3xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @branch
// CHECK: scf.if
// CHECK:   iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: }
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
func.func @branch(%x: tensor<4x8xf32>, %y: tensor<8x3xf32>, %cond: i1) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x3xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.if %cond -> tensor<4x3xf32> {
    %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z0 : tensor<4x3xf32>) {
    ^bb0(%u: f32, %w: f32, %o: f32):
      %m = arith.mulf %u, %w : f32
      %s = arith.addf %o, %m : f32
      linalg.yield %s : f32
    } -> tensor<4x3xf32>
    scf.yield %p : tensor<4x3xf32>
  } else {
    scf.yield %z0 : tensor<4x3xf32>
  }
  %p2 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z0 : tensor<4x3xf32>) {
  ^bb0(%u: f32, %w: f32, %o: f32):
    %m = arith.mulf %u, %w : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %r, %p2 : tensor<4x3xf32>, tensor<4x3xf32>
}
