// RUN: hla-opt %s --hla-gpu-distribute-graph-ops | FileCheck %s

// Tests hla-gpu-distribute-graph-ops: the matmul and its fill become loops
// of 4 blocks of 16 rows (row offset = block index * 16), mapped to blocks;
// a full reduction (no parallel loop) and the fill of a 0-d tensor become
// one-block loops; an insert_slice becomes a linalg.copy of its source into
// the destination slice, itself a loop, after which the insert writes in
// place. Every loop it makes is marked hla.graph_loop (no chunk loop).

// CHECK-LABEL: func.func @ops
// CHECK: %[[FILLED:.+]] = scf.forall (%[[I:.+]]) in (4) shared_outs(%[[O:.+]] = %{{.+}}) -> (tensor<64x8xf32>)
// CHECK:   %[[ROW:.+]] = arith.muli %[[I]], %{{.+}} : index
// CHECK:   linalg.fill
// CHECK: } {hla.graph_loop, mapping = [#gpu.block<x>]}
// CHECK: %[[Y:.+]] = scf.forall (%[[J:.+]]) in (4) shared_outs(%[[O2:.+]] = %[[FILLED]]) -> (tensor<64x8xf32>)
// CHECK:   tensor.extract_slice %{{.+}}[%{{.+}}, 0] [16, 32] [1, 1] : tensor<64x32xf32> to tensor<16x32xf32>
// CHECK:   linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<16x32xf32>, tensor<32x8xf32>) outs(%{{.+}} : tensor<16x8xf32>)
// CHECK:   tensor.parallel_insert_slice %{{.+}} into %[[O2]][%{{.+}}, 0] [16, 8] [1, 1]
// CHECK: } {hla.graph_loop, mapping = [#gpu.block<x>]}
// CHECK: scf.forall (%{{.+}}) in (1) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<i32>)
// CHECK:   linalg.fill
// CHECK: %[[MAX:.+]] = scf.forall (%{{.+}}) in (1) shared_outs(%[[M:.+]] = %{{.+}}) -> (tensor<i32>)
// CHECK:   linalg.generic {{.*}} outs(%[[M]] : tensor<i32>)
// CHECK:   tensor.parallel_insert_slice %{{.+}} into %[[M]][] [] []
// CHECK: %[[PADDED:.+]] = scf.forall
// CHECK: %[[SLOT:.+]] = tensor.extract_slice %[[PADDED]][2, 0] [4, 32] [1, 1]
// CHECK: %[[COPIED:.+]] = scf.forall (%{{.+}}) in (1) shared_outs(%{{.+}} = %[[SLOT]]) -> (tensor<4x32xf32>)
// CHECK:   linalg.copy
// CHECK: %[[P:.+]] = tensor.insert_slice %[[COPIED]] into %[[PADDED]][2, 0] [4, 32] [1, 1]
// CHECK: return %[[Y]], %[[MAX]], %[[P]]
func.func @ops(%x: tensor<64x32xf32>, %w: tensor<32x8xf32>, %ids: tensor<64xi32>, %small: tensor<4x32xf32>) -> (tensor<64x8xf32>, tensor<i32>, tensor<6x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x8xf32>) outs(%z : tensor<64x8xf32>) -> tensor<64x8xf32>
  %i0 = arith.constant 0 : i32
  %e0 = tensor.empty() : tensor<i32>
  %m0 = linalg.fill ins(%i0 : i32) outs(%e0 : tensor<i32>) -> tensor<i32>
  %m = linalg.generic {indexing_maps = [affine_map<(t) -> (t)>, affine_map<(t) -> ()>], iterator_types = ["reduction"]} ins(%ids : tensor<64xi32>) outs(%m0 : tensor<i32>) {
  ^bb0(%a: i32, %acc: i32):
    %r = arith.maxsi %a, %acc : i32
    linalg.yield %r : i32
  } -> tensor<i32>
  %pe = tensor.empty() : tensor<6x32xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<6x32xf32>) -> tensor<6x32xf32>
  %p = tensor.insert_slice %small into %pz[2, 0] [4, 32] [1, 1] : tensor<4x32xf32> into tensor<6x32xf32>
  return %y, %m, %p : tensor<64x8xf32>, tensor<i32>, tensor<6x32xf32>
}
