// RUN: hla-opt %s "--hla-hoist-chunk-work=min-products=2 bf16-operands=true" | FileCheck %s

// Tests hla-hoist-chunk-work's bf16-operands: a stacked tile that only
// contractions read as inputs (W, read by W·S) is stacked in bf16, as
// tensor cores would read it (truncated in the parallel pass, widened in
// the loop); one that an elementwise op reads (G's last row) keeps f32.

// CHECK-LABEL: func.func @split
// CHECK-DAG: tensor.empty() : tensor<2x32x8xbf16>
// CHECK-DAG: tensor.empty() : tensor<2x4x8xf32>
// CHECK: scf.forall ({{.*}}) in (2, 4)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: tensor.parallel_insert_slice %{{.*}} : tensor<8x8xbf16> into tensor<2x32x8xbf16>
// CHECK: tensor.parallel_insert_slice %{{.*}} : tensor<8xf32> into tensor<2x4x8xf32>
// CHECK: scf.for
// CHECK: %[[W:.+]] = tensor.extract_slice %{{.*}} : tensor<2x32x8xbf16> to tensor<8x8xbf16>
// CHECK: %[[WIDE:.+]] = linalg.generic {{.*}} ins(%[[W]] : tensor<8x8xbf16>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {{.*}} ins(%[[WIDE]], %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>)

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>

func.func @split(%x: tensor<2x32x8xf32>) -> tensor<2x8x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x8x8xf32>
  %r = scf.forall (%b) in (2) shared_outs(%out = %init) -> (tensor<2x8x8xf32>) {
    %e = tensor.empty() : tensor<8x8xf32>
    %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    %s = scf.for %c = %c0 to %c4 step %c1 iter_args(%st = %s0) -> (tensor<8x8xf32>) {
      %row = arith.muli %c, %c8 : index
      %t = tensor.extract_slice %x[%b, %row, 0] [1, 8, 8] [1, 1, 1] : tensor<2x32x8xf32> to tensor<8x8xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
      %g = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t, %t : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) {
      ^bb0(%p: f32, %q: f32, %acc: f32):
        %m = arith.mulf %p, %q : f32
        %s1 = arith.addf %acc, %m : f32
        linalg.yield %s1 : f32
      } -> tensor<8x8xf32>
      %w = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g, %t : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) {
      ^bb0(%p: f32, %q: f32, %acc: f32):
        %m = arith.mulf %p, %q : f32
        %s1 = arith.addf %acc, %m : f32
        linalg.yield %s1 : f32
      } -> tensor<8x8xf32>
      %v = tensor.extract_slice %g[7, 0] [1, 8] [1, 1] : tensor<8x8xf32> to tensor<8xf32>
      %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%w, %st : tensor<8x8xf32>, tensor<8x8xf32>) outs(%t : tensor<8x8xf32>) {
      ^bb0(%p: f32, %q: f32, %acc: f32):
        %m = arith.mulf %p, %q : f32
        %s1 = arith.addf %acc, %m : f32
        linalg.yield %s1 : f32
      } -> tensor<8x8xf32>
      %next = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %v : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
      ^bb0(%p: f32, %q: f32, %o: f32):
        %s1 = arith.addf %p, %q : f32
        linalg.yield %s1 : f32
      } -> tensor<8x8xf32>
      scf.yield %next : tensor<8x8xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %out[%b, 0, 0] [1, 8, 8] [1, 1, 1] : tensor<8x8xf32> into tensor<2x8x8xf32>
    }
  }
  return %r : tensor<2x8x8xf32>
}
