// RUN: hla-opt %s --hla-share-tile-products | FileCheck %s

// Tests that hla-share-tile-products renames linalg.index with the loops: a
// causal mask built as [p][v] (1 where p >= v) and one built as [v][p] with
// the loops swapped are transposes of each other, so the second becomes a
// transposed read of the first; a strict mask (p > v) is another value.

#id = affine_map<(i, j) -> (i, j)>
#swap = affine_map<(i, j) -> (j, i)>

// CHECK-LABEL: func.func @masks
// CHECK: %[[M:.+]] = linalg.generic
// CHECK: arith.cmpi sge
// CHECK: } -> tensor<4x4xf32>
// CHECK: %[[STRICT:.+]] = linalg.generic
// CHECK: arith.cmpi sgt
// CHECK: } -> tensor<4x4xf32>
// CHECK: %[[T:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], {{.+}} ins(%[[M]] :
// CHECK-NOT: arith.cmpi
// CHECK: return %[[M]], %[[T]], %[[STRICT]]
func.func @masks() -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<4x4xf32>
  %m = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e0 : tensor<4x4xf32>) {
  ^bb0(%o: f32):
    %p = linalg.index 0 : index
    %v = linalg.index 1 : index
    %in = arith.cmpi sge, %p, %v : index
    %w = arith.select %in, %one, %zero : f32
    linalg.yield %w : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %strict = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%o: f32):
    %p = linalg.index 0 : index
    %v = linalg.index 1 : index
    %in = arith.cmpi sgt, %p, %v : index
    %w = arith.select %in, %one, %zero : f32
    linalg.yield %w : f32
  } -> tensor<4x4xf32>
  // [v][p] = 1 where p >= v, written over loops (p, v) with the output
  // transposed: the transpose of %m.
  %e2 = tensor.empty() : tensor<4x4xf32>
  %t = linalg.generic {indexing_maps = [#swap], iterator_types = ["parallel", "parallel"]} outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%o: f32):
    %p = linalg.index 0 : index
    %v = linalg.index 1 : index
    %in = arith.cmpi sge, %p, %v : index
    %w = arith.select %in, %one, %zero : f32
    linalg.yield %w : f32
  } -> tensor<4x4xf32>
  return %m, %t, %strict : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
