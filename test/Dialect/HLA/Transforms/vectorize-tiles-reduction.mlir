// RUN: hla-opt %s --hla-vectorize-tiles | FileCheck %s

// Tests that hla-vectorize-tiles cuts reductions into steps of 8: a whole
// [64, 32] tile summed into a scalar becomes loops over [8, 8] blocks that
// accumulate into the output, never a 2048-element vector (which the
// vector-to-LLVM lowering would unroll element by element).

// CHECK-LABEL: func.func @whole_tile_sum
// CHECK: scf.for %{{.+}} = %{{.+}} to %c64 step %c8 iter_args(%{{.+}} = %{{.+}}) -> (tensor<f32>)
// CHECK:   scf.for %{{.+}} = %{{.+}} to %c32 step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<f32>)
// CHECK:     vector.transfer_read %{{.+}} : tensor<8x8xf32>, vector<8x8xf32>
// CHECK:     vector.multi_reduction <add>, %{{.+}}, %{{.+}} [0, 1] : vector<8x8xf32> to f32
// CHECK-NOT: vector<64x32xf32>
func.func @whole_tile_sum(%x: tensor<64x32xf32>, %init: tensor<f32>) -> tensor<f32> {
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                         iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<64x32xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %sum : tensor<f32>
}
