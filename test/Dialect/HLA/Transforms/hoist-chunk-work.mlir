// RUN: hla-opt %s --split-input-file "--hla-hoist-chunk-work=min-products=2 report" --mlir-print-op-on-diagnostic=false --verify-diagnostics | FileCheck %s

// Tests hla-hoist-chunk-work: the work of a chunk loop that its carried
// state does not reach and whose slice holds a reduction (G = T·T and
// W = G·T, T the chunk's token rows) moves into a forall over (the
// sequences, the chunks) ahead of the loop, which stacks what the loop
// still reads: W, 8 x 8 per chunk, at rows [c · 8, c · 8 + 8) of a
// [2, 32, 8] stack, and G's last row, a vector, at [b, c] of a [2, 4, 8]
// stack. The loop reads the chunk's slices of both and keeps what the
// state reaches (W·S, the sum) and what costs no reduction (T, read again
// as the product's initial value); G and W are no longer computed in it.

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>

// CHECK-LABEL: func.func @split
// CHECK-DAG: %[[WS:.+]] = tensor.empty() : tensor<2x32x8xf32>
// CHECK-DAG: %[[VS:.+]] = tensor.empty() : tensor<2x4x8xf32>
// CHECK: %[[STACKS:.+]]:2 = scf.forall (%[[B:.+]], %[[C:.+]]) in (2, 4) shared_outs(%[[W_OUT:.+]] = %[[WS]], %[[V_OUT:.+]] = %[[VS]])
// CHECK: %[[T:.+]] = tensor.extract_slice %{{.*}}[%[[B]], %{{.*}}, 0] [1, 8, 8]
// CHECK: %[[G:.+]] = linalg.generic {{.*}} ins(%[[T]], %[[T]]
// CHECK: %[[W:.+]] = linalg.generic {{.*}} ins(%[[G]], %[[T]]
// CHECK: %[[V:.+]] = tensor.extract_slice %[[G]][7, 0] [1, 8]
// CHECK: %[[ROW:.+]] = arith.muli %[[C]], %c8
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[W]] into %[[W_OUT]][%[[B]], %[[ROW]], 0] [1, 8, 8] [1, 1, 1]
// CHECK-NEXT: tensor.parallel_insert_slice %[[V]] into %[[V_OUT]][%[[B]], %[[C]], 0] [1, 1, 8] [1, 1, 1]
// CHECK: scf.forall (%[[B2:.+]]) in (2)
// CHECK: scf.for %[[C2:.+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[S:.+]] = %{{.*}})
// CHECK: %[[ROW2:.+]] = arith.muli %[[C2]], %c8
// CHECK: %[[W2:.+]] = tensor.extract_slice %[[STACKS]]#0[%[[B2]], %[[ROW2]], 0] [1, 8, 8] [1, 1, 1] : tensor<2x32x8xf32> to tensor<8x8xf32>
// CHECK: %[[V2:.+]] = tensor.extract_slice %[[STACKS]]#1[%[[B2]], %[[C2]], 0] [1, 1, 8] [1, 1, 1] : tensor<2x4x8xf32> to tensor<8xf32>
// CHECK-NOT: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>) outs(%{{.*}} : tensor<8x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[W2]], %[[S]] :
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[V2]] :
// CHECK: scf.yield
func.func @split(%x: tensor<2x32x8xf32>) -> tensor<2x8x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x8x8xf32>
  // expected-remark @below {{hla-hoist-chunk-work: 2 reductions moved to a pass parallel over chunks, 1 staying; 2 tiles stacked (0 in bf16)}}
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

// -----

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>

// One reduction would move (fewer than min-products): the loop stays whole.
// CHECK-LABEL: func.func @too_few
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK-NOT: scf.forall (
func.func @too_few(%x: tensor<2x32x8xf32>) -> tensor<2x8x8xf32> {
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
      %v = tensor.extract_slice %g[7, 0] [1, 8] [1, 1] : tensor<8x8xf32> to tensor<8xf32>
      %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g, %st : tensor<8x8xf32>, tensor<8x8xf32>) outs(%t : tensor<8x8xf32>) {
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

// -----

#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>

// Two reductions would move and two stay (the sequential part would keep
// half the products): the loop stays whole.
// CHECK-LABEL: func.func @too_many_stay
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK-NOT: scf.forall (
func.func @too_many_stay(%x: tensor<2x32x8xf32>) -> tensor<2x8x8xf32> {
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
      %y2 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y, %st : tensor<8x8xf32>, tensor<8x8xf32>) outs(%t : tensor<8x8xf32>) {
      ^bb0(%p: f32, %q: f32, %acc: f32):
        %m = arith.mulf %p, %q : f32
        %s1 = arith.addf %acc, %m : f32
        linalg.yield %s1 : f32
      } -> tensor<8x8xf32>
      %next = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%y2, %v : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
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
