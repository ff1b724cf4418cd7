// RUN: hla-opt %s --hla-share-tile-products | FileCheck %s

// Tests hla-share-tile-products on products of the same matrices associated
// differently. With Q, G [4, 8] and A [8, 8]: (G·Aᵀ)·Qᵀ is computed first;
// (Q·A)·Gᵀ is its transpose, so it and its own factor Q·A go, and its
// reader (a product) reads (G·Aᵀ)·Qᵀ through a transposed map; Q·(A·Gᵀ)
// is the same chain again, so it and A·Gᵀ go too, its reader (elementwise)
// reading (G·Aᵀ)·Qᵀ transposed as well.
// A product that accumulates into a tile that is not zero is no chain: it
// is kept.

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// CHECK-DAG: #[[$MK:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$NK:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$KN:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[$MN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$KM:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[$JI:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[$IJ:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @chains
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<4x8xf32>, %[[A:[^:]+]]: tensor<8x8xf32>, %[[W:[^:]+]]: tensor<4x4xf32>, %[[INIT:[^:]+]]: tensor<4x4xf32>)
// CHECK: %[[GA:.+]] = linalg.generic {indexing_maps = [#[[$MK]], #[[$NK]], #[[$MN]]], {{.+}} ins(%[[G]], %[[A]] :
// CHECK-NOT: linalg.generic
// CHECK: %[[GAQ:.+]] = linalg.generic {indexing_maps = [#[[$MK]], #[[$NK]], #[[$MN]]], {{.+}} ins(%[[GA]], %[[Q]] :
// CHECK-NOT: linalg.generic
// CHECK: %[[R1:.+]] = linalg.generic {indexing_maps = [#[[$KM]], #[[$KN]], #[[$MN]]], {{.+}} ins(%[[GAQ]], %[[W]] :
// CHECK-NOT: linalg.generic
// CHECK: %[[R2:.+]] = linalg.generic {indexing_maps = [#[[$JI]], #[[$IJ]]], {{.+}} ins(%[[GAQ]] :
// CHECK-NOT: linalg.generic
// CHECK: %[[KEPT:.+]] = linalg.generic {indexing_maps = [#[[$MK]], #[[$NK]], #[[$MN]]], {{.+}} ins(%[[GA]], %[[Q]] : {{.+}} outs(%[[INIT]] :
// CHECK-NOT: linalg.generic
// CHECK: return %[[R1]], %[[R2]], %[[KEPT]]
func.func @chains(%q: tensor<4x8xf32>, %g: tensor<4x8xf32>, %a: tensor<8x8xf32>, %w: tensor<4x4xf32>, %init: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e48 = tensor.empty() : tensor<4x8xf32>
  %z48 = linalg.fill ins(%zero : f32) outs(%e48 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e84 = tensor.empty() : tensor<8x4xf32>
  %z84 = linalg.fill ins(%zero : f32) outs(%e84 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e44 = tensor.empty() : tensor<4x4xf32>
  %z44 = linalg.fill ins(%zero : f32) outs(%e44 : tensor<4x4xf32>) -> tensor<4x4xf32>
  // (G·Aᵀ)·Qᵀ
  %ga = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g, %a : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z48 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %gaq = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ga, %q : tensor<4x8xf32>, tensor<4x8xf32>) outs(%z44 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  // (Q·A)·Gᵀ
  %qa = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %a : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z48 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %qag = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%qa, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%z44 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %r1 = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%qag, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z44 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  // Q·(A·Gᵀ)
  %ag = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %g : tensor<8x8xf32>, tensor<4x8xf32>) outs(%z84 : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %qag2 = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %ag : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z44 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%qag2 : tensor<4x4xf32>) outs(%e44 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  // (G·Aᵀ)·Qᵀ added to %init: not a product from zero.
  %kept = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ga, %q : tensor<4x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %r1, %r2, %kept : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
