// RUN: hla-opt %s --test-hla-prepare-register-tiles=rewrite=flatten --split-input-file --verify-diagnostics | FileCheck %s

// Tests flattenBlockedTiles (PrepareTiles.h), which
// hla-gpu-lower-register-tiles applies to its copy of a loop: tiles in
// blocks (KDA's derived backward's rows as [blocks, 16, d], pairs as
// [blocks, 16, 16] and [blocks, 16, blocks, 16]) become the 2-D tiles they
// view. Reshapes vanish; a generic over blocks iterates over the 2-D
// tile's rows (block and in-block index the row's floordiv and mod, in
// maps and in linalg.index alike); a loop no operand indexes by itself
// gets a window operand, never read (the sum over the other token's
// blocks).

// CHECK-DAG: #[[$OWN:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$PARTNER:.+]] = affine_map<(d0, d1, d2) -> (d1 + (d0 floordiv 16) * 16, d2)>
// CHECK-DAG: #[[$BAND:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$BAND_AT:.+]] = affine_map<(d0, d1) -> (d0, d1 mod 16)>
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$BLOCKS:.+]] = affine_map<(d0, d1, d2) -> (d0, d1 * 16 + d2)>
// CHECK-DAG: #[[$WINDOW:.+]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @bands
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<64x16xf32>)
// CHECK: %[[B:.+]] = linalg.generic {indexing_maps = [#[[$OWN]], #[[$PARTNER]], #[[$BAND]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg0 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%[[FILL]] : tensor<64x16xf32>)
// CHECK: %[[ROW:.+]] = linalg.index 0 : index
// CHECK: %[[I:.+]] = arith.remui %[[ROW]], %{{.*}} : index
// CHECK: %[[J:.+]] = linalg.index 1 : index
// CHECK: arith.cmpi slt, %[[J]], %[[I]] : index
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#[[$BAND_AT]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[B]], %arg1 : tensor<64x16xf32>, tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK: arith.divui
// CHECK: arith.divui
// CHECK: %[[WIN:.+]] = tensor.empty() : tensor<4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$BLOCKS]], #[[$WINDOW]], #[[$OWN]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[P]], %[[WIN]] : tensor<64x64xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<64x16xf32>)
// CHECK-NEXT: ^bb0(%[[SUMMAND:.+]]: f32, %{{.*}}: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: arith.addf %[[ACC]], %[[SUMMAND]] : f32
// CHECK-NOT: tensor.collapse_shape {{.*}} tensor<4x16x4x16xf32>
// CHECK: tensor.parallel_insert_slice %[[P]] into
func.func @bands(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %init = tensor.empty() : tensor<1x64x64xf32>
  %r = scf.forall (%h) in (1) shared_outs(%out = %init) -> (tensor<1x64x64xf32>) {
    %zero = arith.constant 0.0 : f32
    %xb = tensor.expand_shape %x [[0, 1], [2]] output_shape [4, 16, 64] : tensor<64x64xf32> into tensor<4x16x64xf32>
    %e3 = tensor.empty() : tensor<4x16x16xf32>
    %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %band = linalg.generic {indexing_maps = [affine_map<(b, i, j, c) -> (b, i, c)>, affine_map<(b, i, j, c) -> (b, j, c)>, affine_map<(b, i, j, c) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%xb, %xb : tensor<4x16x64xf32>, tensor<4x16x64xf32>) outs(%f3 : tensor<4x16x16xf32>) {
    ^bb0(%a: f32, %b2: f32, %acc: f32):
      %i = linalg.index 1 : index
      %j = linalg.index 2 : index
      %lower = arith.cmpi slt, %j, %i : index
      %p = arith.mulf %a, %b2 : f32
      %s = arith.addf %acc, %p : f32
      %v = arith.select %lower, %s, %acc : f32
      linalg.yield %v : f32
    } -> tensor<4x16x16xf32>
    %yb = tensor.expand_shape %y [[0, 1], [2, 3]] output_shape [4, 16, 4, 16] : tensor<64x64xf32> into tensor<4x16x4x16xf32>
    %e4 = tensor.empty() : tensor<4x16x4x16xf32>
    %pairs = linalg.generic {indexing_maps = [affine_map<(b, i, c, j) -> (b, i, j)>, affine_map<(b, i, c, j) -> (b, i, c, j)>, affine_map<(b, i, c, j) -> (b, i, c, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%band, %yb : tensor<4x16x16xf32>, tensor<4x16x4x16xf32>) outs(%e4 : tensor<4x16x4x16xf32>) {
    ^bb0(%w: f32, %z: f32, %o: f32):
      %b = linalg.index 0 : index
      %c = linalg.index 2 : index
      %same = arith.cmpi eq, %b, %c : index
      %v = arith.select %same, %w, %z : f32
      linalg.yield %v : f32
    } -> tensor<4x16x4x16xf32>
    %e3b = tensor.empty() : tensor<4x16x16xf32>
    %f3b = linalg.fill ins(%zero : f32) outs(%e3b : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %across = linalg.generic {indexing_maps = [affine_map<(b, i, c, j) -> (b, i, c, j)>, affine_map<(b, i, c, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%pairs : tensor<4x16x4x16xf32>) outs(%f3b : tensor<4x16x16xf32>) {
    ^bb0(%w: f32, %acc: f32):
      %s = arith.addf %acc, %w : f32
      linalg.yield %s : f32
    } -> tensor<4x16x16xf32>
    %flat = tensor.collapse_shape %pairs [[0, 1], [2, 3]] : tensor<4x16x4x16xf32> into tensor<64x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %flat into %out[%h, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<64x64xf32> into tensor<1x64x64xf32>
    }
  }
  %c = tensor.collapse_shape %r [[0, 1], [2]] : tensor<1x64x64xf32> into tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

// A reshape other than [a, b, c] <-> [a·b, c] (here [a, b·c]) has no 2-D
// tile of that form: the loop is left as it was.
// CHECK-LABEL: func.func @other_grouping
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
// CHECK-SAME: tensor<64x4x16xf32>
// CHECK: tensor.collapse_shape
func.func @other_grouping(%x: tensor<64x64xf32>) -> tensor<1x64x64xf32> {
  %init = tensor.empty() : tensor<1x64x64xf32>
  // expected-remark @below {{blocked tiles kept}}
  %r = scf.forall (%h) in (1) shared_outs(%out = %init) -> (tensor<1x64x64xf32>) {
    %xb = tensor.expand_shape %x [[0], [1, 2]] output_shape [64, 4, 16] : tensor<64x64xf32> into tensor<64x4x16xf32>
    %e = tensor.empty() : tensor<64x4x16xf32>
    %twice = linalg.generic {indexing_maps = [affine_map<(r, b, j) -> (r, b, j)>, affine_map<(r, b, j) -> (r, b, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xb : tensor<64x4x16xf32>) outs(%e : tensor<64x4x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<64x4x16xf32>
    %flat = tensor.collapse_shape %twice [[0], [1, 2]] : tensor<64x4x16xf32> into tensor<64x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %flat into %out[%h, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<64x64xf32> into tensor<1x64x64xf32>
    }
  }
  return %r : tensor<1x64x64xf32>
}
