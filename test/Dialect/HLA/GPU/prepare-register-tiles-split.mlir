// RUN: hla-opt %s --test-hla-prepare-register-tiles=rewrite=split | FileCheck %s

// Tests splitElementwiseResults (PrepareTiles.h): an elementwise generic
// with two results (fusion keeps a producer's result where another op reads
// it) becomes one generic per result, each computing only what its result
// needs; the first result's running value, which the second reads, is an
// input of the second.

// CHECK-LABEL: func.func @two_results
// CHECK: %[[FIRST:.+]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%arg2 : tensor<64x64xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %{{.*}}: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[E:.+]] = math.exp %[[A]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[ACC]], %[[E]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: %[[SECOND:.+]] = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%arg3 : tensor<64x64xf32>)
// CHECK-NEXT: ^bb0(%[[A2:.+]]: f32, %[[B2:.+]]: f32, %[[ACC2:.+]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[E2:.+]] = math.exp %[[A2]] : f32
// CHECK-NEXT: %[[S2:.+]] = arith.addf %[[ACC2]], %[[E2]] : f32
// CHECK-NEXT: %[[T2:.+]] = arith.addf %[[S2]], %[[B2]] : f32
// CHECK-NEXT: linalg.yield %[[T2]] : f32
// CHECK: tensor.parallel_insert_slice %[[FIRST]]
// CHECK: tensor.parallel_insert_slice %[[SECOND]]
func.func @two_results(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>, %acc: tensor<64x64xf32>, %e: tensor<64x64xf32>) -> (tensor<1x64x64xf32>, tensor<1x64x64xf32>) {
  %init = tensor.empty() : tensor<1x64x64xf32>
  %r:2 = scf.forall (%h) in (1) shared_outs(%o1 = %init, %o2 = %init) -> (tensor<1x64x64xf32>, tensor<1x64x64xf32>) {
    %g:2 = linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r, c)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc, %e : tensor<64x64xf32>, tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32, %s: f32, %unused: f32):
      %ea = math.exp %a : f32
      %sum = arith.addf %s, %ea : f32
      %t = arith.addf %sum, %b : f32
      linalg.yield %sum, %t : f32, f32
    } -> (tensor<64x64xf32>, tensor<64x64xf32>)
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g#0 into %o1[%h, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<64x64xf32> into tensor<1x64x64xf32>
      tensor.parallel_insert_slice %g#1 into %o2[%h, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<64x64xf32> into tensor<1x64x64xf32>
    }
  }
  return %r#0, %r#1 : tensor<1x64x64xf32>, tensor<1x64x64xf32>
}
