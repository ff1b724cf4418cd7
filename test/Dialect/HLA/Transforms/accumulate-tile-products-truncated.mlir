// RUN: hla-opt %s --hla-accumulate-tile-products | FileCheck %s

// Tests hla-accumulate-tile-products on a bf16 gradient tile, the sum of two
// f32 products truncated: the first product accumulates into the second
// (a sum of a product and a tile starts from that tile itself, no copy), and
// the truncation follows as a generic of its own.

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @truncated
// CHECK-SAME: (%[[A:[^:]+]]: tensor<64x64xf32>, %[[B:[^:]+]]: tensor<64x64xf32>, %[[C:[^:]+]]: tensor<64x64xf32>, %[[D:[^:]+]]: tensor<64x64xf32>)
// CHECK: %[[FILL:.+]] = linalg.fill
// CHECK: %[[FIRST:.+]] = linalg.generic {{.+}} ins(%[[C]], %[[D]] : {{.+}}) outs(%[[FILL]] : tensor<64x64xf32>)
// CHECK: %[[SECOND:.+]] = linalg.generic {{.+}} ins(%[[A]], %[[B]] : {{.+}}) outs(%[[FIRST]] : tensor<64x64xf32>)
// CHECK: %[[CAST:.+]] = linalg.generic {{.+}} ins(%[[SECOND]] : tensor<64x64xf32>) outs(%{{.+}} : tensor<64x64xbf16>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.truncf
// CHECK-NEXT: linalg.yield
// CHECK: return %[[CAST]]
func.func @truncated(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>, %d: tensor<64x64xf32>) -> tensor<64x64xbf16> {
  %e = tensor.empty() : tensor<64x64xf32>
  %h = tensor.empty() : tensor<64x64xbf16>
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
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%ab, %cd : tensor<64x64xf32>, tensor<64x64xf32>) outs(%h : tensor<64x64xbf16>) {
  ^bb0(%abi: f32, %cdi: f32, %o: bf16):
    %u = arith.addf %abi, %cdi : f32
    %t = arith.truncf %u : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x64xbf16>
  return %sum : tensor<64x64xbf16>
}
