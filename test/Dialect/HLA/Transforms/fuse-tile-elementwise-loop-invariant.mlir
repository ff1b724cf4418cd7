// RUN: hla-opt %s --hla-fuse-tile-elementwise | FileCheck %s

// Tests that hla-fuse-tile-elementwise keeps arithmetic on a tile that a
// loop does not change outside the loop (LinSimp's scaled queries, read at
// every anchor offset): fused into the loop's consumer it would be done
// again at every iteration. A cast alone, and a tile made of indices alone
// (a mask), still fuse into the loop; outside any loop the arithmetic
// fuses as before.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @scaled_outside
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<64x64xbf16>, %[[R:[^:]+]]: tensor<64x64xf32>)
// CHECK: %[[SCALED:.+]] = linalg.generic {{.+}} ins(%[[Q]] : tensor<64x64xbf16>)
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: scf.for
// CHECK: linalg.generic {{.+}} ins(%[[SCALED]], %{{.+}} : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK-NOT: arith.extf
// CHECK: scf.yield
func.func @scaled_outside(%q: tensor<64x64xbf16>, %r: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %tau = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<64x64xbf16>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    %s = arith.mulf %f, %tau : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %out = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %r) -> (tensor<64x64xf32>) {
    %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%scaled, %acc : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<64x64xf32>
    scf.yield %x : tensor<64x64xf32>
  }
  return %out : tensor<64x64xf32>
}

// CHECK-LABEL: func.func @cast_and_mask_inside
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<64x64xbf16>, %[[R:[^:]+]]: tensor<64x64xf32>)
// CHECK: scf.for
// CHECK: linalg.generic {{.+}} ins(%[[Q]], %{{.+}} : tensor<64x64xbf16>, tensor<64x64xf32>)
// CHECK-DAG: arith.extf
// CHECK-DAG: linalg.index
// CHECK-DAG: arith.select
// CHECK: scf.yield
func.func @cast_and_mask_inside(%q: tensor<64x64xbf16>, %r: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<64x64xbf16>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<64x64xf32>
  %mask = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<64x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %below = arith.cmpi sge, %i, %j : index
    %m = arith.select %below, %one, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %out = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %r) -> (tensor<64x64xf32>) {
    %x = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%wide, %acc, %mask : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %n = arith.mulf %m, %c : f32
      linalg.yield %n : f32
    } -> tensor<64x64xf32>
    scf.yield %x : tensor<64x64xf32>
  }
  return %out : tensor<64x64xf32>
}

// CHECK-LABEL: func.func @no_loop
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<64x64xbf16>, %[[R:[^:]+]]: tensor<64x64xf32>)
// CHECK: %[[X:.+]] = linalg.generic {{.+}} ins(%[[Q]], %[[R]] : tensor<64x64xbf16>, tensor<64x64xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[X]]
func.func @no_loop(%q: tensor<64x64xbf16>, %r: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %tau = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<64x64xbf16>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    %s = arith.mulf %f, %tau : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%scaled, %r : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  return %x : tensor<64x64xf32>
}
