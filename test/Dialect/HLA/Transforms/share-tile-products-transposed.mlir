// RUN: hla-opt %s --hla-share-tile-products | FileCheck %s

// Tests hla-share-tile-products on a product and its transpose: K·Qᵀ is
// Q·Kᵀ transposed, so it is not computed again; its reader reads Q·Kᵀ
// through a transposed map instead.

#ak = affine_map<(i, j, k) -> (i, k)>
#bk = affine_map<(i, j, k) -> (j, k)>
#kb = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>

// CHECK-DAG: #[[$QK_A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$QK_B:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$TRANSPOSED:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[$V:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @qk_and_kq
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<4x8xf32>, %[[K:[^:]+]]: tensor<4x8xf32>, %[[VAL:[^:]+]]: tensor<4x3xf32>)
// CHECK: %[[QK:.+]] = linalg.generic {indexing_maps = [#[[$QK_A]], #[[$QK_B]], #[[$OUT]]], {{.+}} ins(%[[Q]], %[[K]] :
// CHECK-NOT: ins(%[[K]], %[[Q]]
// CHECK: %[[O:.+]] = linalg.generic {indexing_maps = [#[[$TRANSPOSED]], #[[$V]], #[[$OUT]]], {{.+}} ins(%[[QK]], %[[VAL]] :
// CHECK: return %[[O]], %[[QK]]
func.func @qk_and_kq(%q: tensor<4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x4xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %qk = linalg.generic {indexing_maps = [#ak, #bk, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : tensor<4x8xf32>, tensor<4x8xf32>) outs(%z0 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %kq = linalg.generic {indexing_maps = [#ak, #bk, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%k, %q : tensor<4x8xf32>, tensor<4x8xf32>) outs(%z1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %o = linalg.generic {indexing_maps = [#ak, #kb, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%kq, %v : tensor<4x4xf32>, tensor<4x3xf32>) outs(%z2 : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o2: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o2, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %o, %qk : tensor<4x3xf32>, tensor<4x4xf32>
}
