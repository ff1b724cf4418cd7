// RUN: hla-opt %s --hla-accumulate-tile-products | FileCheck %s

// Tests hla-accumulate-tile-products on a sum of two products and a tile
// (x·m + A·B + C·D): the products become one chain of accumulations, the
// first starting from the rest of the sum (a generic of x and m alone), the
// second from the first; no zero-started product and no final sum remain.

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @sum
// CHECK-SAME: (%[[A:[^:]+]]: tensor<64x64xf32>, %[[B:[^:]+]]: tensor<64x64xf32>, %[[C:[^:]+]]: tensor<64x64xf32>, %[[D:[^:]+]]: tensor<64x64xf32>, %[[X:[^:]+]]: tensor<64x64xf32>, %[[M:[^:]+]]: tensor<64x64xf32>)
// CHECK: %[[REST:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[M]] : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK:   arith.mulf
// CHECK-NOT: arith.addf
// CHECK: linalg.yield
// CHECK: %[[FIRST:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[C]], %[[D]] : {{.+}}) outs(%[[REST]] : tensor<64x64xf32>)
// CHECK: %[[SECOND:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[A]], %[[B]] : {{.+}}) outs(%[[FIRST]] : tensor<64x64xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[SECOND]]
func.func @sum(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>, %d: tensor<64x64xf32>, %x: tensor<64x64xf32>, %m: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z0 = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %ab = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z0 : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %cd = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%c, %d : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z1 : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %ab, %m, %cd : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%xi: f32, %abi: f32, %mi: f32, %cdi: f32, %o: f32):
    %xm = arith.mulf %xi, %mi : f32
    %t = arith.addf %xm, %abi : f32
    %u = arith.addf %t, %cdi : f32
    linalg.yield %u : f32
  } -> tensor<64x64xf32>
  return %sum : tensor<64x64xf32>
}
