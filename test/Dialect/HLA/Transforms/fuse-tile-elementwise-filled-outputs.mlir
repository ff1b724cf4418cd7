// RUN: hla-opt %s --hla-fuse-tile-elementwise | FileCheck %s

// Tests that hla-fuse-tile-elementwise reads a filled output of an
// elementwise generic as the fill's scalar: a producer adding into a zero
// fill, fused into its consumer, leaves one generic with one result, not
// the producer's tile kept as a second result nobody reads (upstream's
// fusion keeps the results of producers whose bodies read their outputs).
// A reduction's filled accumulator stays an accumulator.

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @sum_into_zero
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x8xf32>, %[[Y:[^:]+]]: tensor<8x8xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[Y]] : tensor<8x8xf32>, tensor<8x8xf32>) outs(%{{.+}} : tensor<8x8xf32>)
// CHECK-NEXT: ^bb0(%[[IX:.+]]: f32, %[[IY:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:   %[[P:.+]] = arith.mulf %[[IX]], %[[IY]] : f32
// CHECK-NEXT:   %[[ACC:.+]] = arith.addf %[[P]], %[[ZERO]] : f32
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[ACC]], %[[IX]] : f32
// CHECK-NEXT:   linalg.yield %[[S]] : f32
// CHECK-NEXT: } -> tensor<8x8xf32>
// CHECK-NEXT: return %[[SUM]]
func.func @sum_into_zero(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %acc = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc, %x : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<8x8xf32>
  return %scaled : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @product_from_zero
// CHECK: %[[INIT:.+]] = linalg.fill
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} {{.+}} outs(%[[INIT]] : tensor<8x8xf32>)
// CHECK-NEXT: ^bb0(%{{.+}}: f32, %{{.+}}: f32, %[[OUT:.+]]: f32):
// CHECK-NEXT:   %[[P:.+]] = arith.mulf
// CHECK-NEXT:   arith.addf %[[OUT]], %[[P]] : f32
func.func @product_from_zero(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %product = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<8x8xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %product : tensor<8x8xf32>
}
