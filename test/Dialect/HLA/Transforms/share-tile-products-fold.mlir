// RUN: hla-opt %s --hla-share-tile-products | FileCheck %s

// Tests that hla-share-tile-products folds a transpose into the generics
// reading it (composing the maps) and drops it once nothing reads it.

#id = affine_map<(i, j) -> (i, j)>
#swap = affine_map<(i, j) -> (j, i)>

// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$SWAP:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @fold
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x3xf32>, %[[Y:[^:]+]]: tensor<3x4xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[$SWAP]], #[[$ID]], #[[$ID]]], {{.+}} ins(%[[X]], %[[Y]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK: return %[[R]]
func.func @fold(%x: tensor<4x3xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %e0 = tensor.empty() : tensor<3x4xf32>
  %t = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x3xf32>) outs(%e0 : tensor<3x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<3x4xf32>
  %e1 = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t, %y : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e1 : tensor<3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}
