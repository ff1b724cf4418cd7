// RUN: hla-opt %s --hla-share-tile-products | FileCheck %s

// Tests hla-share-tile-products on one product written twice: the second
// names its loops in another order and multiplies its inputs the other way
// round, and its zero fill is a different tensor. It is replaced by the
// first; an elementwise op with the same inputs but another body is kept.

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#a2 = affine_map<(k, m, n) -> (m, k)>
#b2 = affine_map<(k, m, n) -> (k, n)>
#c2 = affine_map<(k, m, n) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[Y:[^:]+]]: tensor<8x3xf32>)
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[Y]] :
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} ins(%[[P]], %[[P]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK: %[[DIFF:.+]] = linalg.generic {{.+}} ins(%[[P]], %[[P]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.subf
// CHECK: return %[[SUM]], %[[DIFF]]
func.func @twice(%x: tensor<4x8xf32>, %y: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x3xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z0 : tensor<4x3xf32>) {
  ^bb0(%u: f32, %w: f32, %o: f32):
    %m = arith.mulf %u, %w : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %e1 = tensor.empty() : tensor<4x3xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %p2 = linalg.generic {indexing_maps = [#b2, #a2, #c2], iterator_types = ["reduction", "parallel", "parallel"]} ins(%y, %x : tensor<8x3xf32>, tensor<4x8xf32>) outs(%z1 : tensor<4x3xf32>) {
  ^bb0(%w: f32, %u: f32, %o: f32):
    %m = arith.mulf %w, %u : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %p2 : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e2 : tensor<4x3xf32>) {
  ^bb0(%u: f32, %w: f32, %o: f32):
    %s = arith.addf %u, %w : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %e3 = tensor.empty() : tensor<4x3xf32>
  %diff = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %p2 : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e3 : tensor<4x3xf32>) {
  ^bb0(%u: f32, %w: f32, %o: f32):
    %s = arith.subf %u, %w : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %sum, %diff : tensor<4x3xf32>, tensor<4x3xf32>
}
