// RUN: hla-opt %s --hla-fuse-tile-elementwise | FileCheck %s

// Tests hla-fuse-tile-elementwise: a mask multiplication feeding a scaling
// becomes one elementwise generic, but the elementwise producer of a
// contraction stays separate, so the contraction keeps its C += A·B body.

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x8xf32>, %[[M:[^:]+]]: tensor<8x8xf32>)
// CHECK: %[[E:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[M]] : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.mulf
// CHECK: } -> tensor<8x8xf32>
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[E]], %[[X]] : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK:   arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
func.func @chain(%x: tensor<8x8xf32>, %mask: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %mask : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %p = arith.mulf %a, %m : f32
    linalg.yield %p : f32
  } -> tensor<8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%masked : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %p = arith.mulf %a, %two : f32
    linalg.yield %p : f32
  } -> tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %product = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%scaled, %x : tensor<8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<8x8xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %product : tensor<8x8xf32>
}
