// RUN: hla-opt %s --test-hla-prepare-register-tiles=rewrite=rows | FileCheck %s

// Tests insertedRowsAsSelects (PrepareTiles.h): a vector inserted as one
// row of a tile made in the loop (the cotangent of a row read: KDA's Γ at
// a chunk's last token) becomes an elementwise select on the row index,
// the vector read as a column broadcast; rows into the loop's output stay
// insertions.

// CHECK-DAG: #[[$COLUMN:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @last_row
// CHECK: %[[ZERO:.+]] = linalg.fill
// CHECK: %[[ROW:.+]] = arith.constant 63 : index
// CHECK: linalg.generic {indexing_maps = [#[[$COLUMN]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %[[ZERO]] : tensor<64xf32>, tensor<64x64xf32>)
// CHECK-NEXT: ^bb0(%[[V:.+]]: f32, %[[T:.+]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[AT:.+]] = linalg.index 0 : index
// CHECK-NEXT: %[[HERE:.+]] = arith.cmpi eq, %[[AT]], %[[ROW]] : index
// CHECK-NEXT: %[[S:.+]] = arith.select %[[HERE]], %[[V]], %[[T]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NOT: tensor.insert_slice %arg0
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[0, 0] [1, 64] [1, 1] : tensor<64xf32> into tensor<1x64xf32>
func.func @last_row(%v: tensor<64xf32>) -> (tensor<1x64x64xf32>, tensor<1x1x64xf32>) {
  %init = tensor.empty() : tensor<1x64x64xf32>
  %init2 = tensor.empty() : tensor<1x1x64xf32>
  %r:2 = scf.forall (%h) in (1) shared_outs(%out = %init, %out2 = %init2) -> (tensor<1x64x64xf32>, tensor<1x1x64xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<64x64xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
    %t = tensor.insert_slice %v into %z[63, 0] [1, 64] [1, 1] : tensor<64xf32> into tensor<64x64xf32>
    %rows = tensor.extract_slice %out2[%h, 0, 0] [1, 1, 64] [1, 1, 1] : tensor<1x1x64xf32> to tensor<1x64xf32>
    %w = tensor.insert_slice %v into %rows[0, 0] [1, 64] [1, 1] : tensor<64xf32> into tensor<1x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %out[%h, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<64x64xf32> into tensor<1x64x64xf32>
      tensor.parallel_insert_slice %w into %out2[%h, 0, 0] [1, 1, 64] [1, 1, 1] : tensor<1x64xf32> into tensor<1x1x64xf32>
    }
  }
  return %r#0, %r#1 : tensor<1x64x64xf32>, tensor<1x1x64xf32>
}
