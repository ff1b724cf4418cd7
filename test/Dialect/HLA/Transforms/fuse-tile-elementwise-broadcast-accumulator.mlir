// RUN: hla-opt %s --hla-fuse-tile-elementwise | FileCheck %s

// Tests that hla-fuse-tile-elementwise leaves apart a producer that reads
// its output (an accumulator that is not a fill) from a consumer that
// broadcasts it: fused, the producer's result would stay a result of the
// consumer's 2-D loop indexed by rows only, and every column would add into
// the same element again (on the GPU, threads racing on it). Read without
// a broadcast, the same producer still fuses.

#row = affine_map<(d0, d1) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @broadcast_accumulator
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xf32>, %[[ACC:[^:]+]]: tensor<8xf32>, %[[T:[^:]+]]: tensor<8x4xf32>)
// CHECK: %[[ROW:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<8xf32>) outs(%[[ACC]] : tensor<8xf32>)
// CHECK: %[[TILE:.+]] = linalg.generic {{.+}} ins(%[[ROW]], %[[T]] : tensor<8xf32>, tensor<8x4xf32>)
// CHECK: return %[[TILE]]
func.func @broadcast_accumulator(%x: tensor<8xf32>, %acc: tensor<8xf32>, %t: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %half = arith.constant 0.5 : f32
  %sum = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %half : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %scaled = linalg.generic {indexing_maps = [#row, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%sum, %t : tensor<8xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<8x4xf32>
  return %scaled : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @same_shape_accumulator
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @same_shape_accumulator(%x: tensor<8xf32>, %acc: tensor<8xf32>, %t: tensor<8xf32>) -> tensor<8xf32> {
  %half = arith.constant 0.5 : f32
  %sum = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %half : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %scaled = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} ins(%sum, %t : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  return %scaled : tensor<8xf32>
}
