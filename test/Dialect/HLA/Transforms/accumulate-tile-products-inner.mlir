// RUN: hla-opt %s --hla-accumulate-tile-products | FileCheck %s

// Tests hla-accumulate-tile-products on a sum of two products inside a
// longer expression (LinSimp's acc + u ⊙ (F·S + P·V)): the later product
// starts from the earlier one and the generic reads it in place of the sum;
// and that it leaves a product added to a tile that is not a product, and a
// sum of three products, as they are.

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @two_products
// CHECK-SAME: (%[[A:[^:]+]]: tensor<64x64xf32>, %[[B:[^:]+]]: tensor<64x64xf32>, %[[C:[^:]+]]: tensor<64x64xf32>, %[[D:[^:]+]]: tensor<64x64xf32>, %[[U:[^:]+]]: tensor<64x64xf32>, %[[X:[^:]+]]: tensor<64x64xf32>)
// CHECK: %[[FIRST:.+]] = linalg.generic {{.+}} ins(%[[A]], %[[B]] : {{.+}}) outs(%{{.+}} : tensor<64x64xf32>)
// CHECK: %[[SECOND:.+]] = linalg.generic {{.+}} ins(%[[C]], %[[D]] : {{.+}}) outs(%[[FIRST]] : tensor<64x64xf32>)
// CHECK: %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[U]], %[[SECOND]], %[[X]] : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK-NEXT: ^bb0(%[[UI:[^:]+]]: f32, %[[SI:[^:]+]]: f32, %[[XI:[^:]+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[R:.+]] = math.fma %[[UI]], %[[SI]], %[[XI]] : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: return %[[OUT]]
func.func @two_products(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>, %d: tensor<64x64xf32>, %u: tensor<64x64xf32>, %x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %ab = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %cd = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%c, %d : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %out = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%u, %ab, %cd, %x : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%ui: f32, %abi: f32, %cdi: f32, %xi: f32, %o: f32):
    %sum = arith.addf %abi, %cdi : f32
    %r = math.fma %ui, %sum, %xi : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  return %out : tensor<64x64xf32>
}

// A product added to an input tile that is no product: left as it is.
// CHECK-LABEL: func.func @product_and_tile
// CHECK: %[[P:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<64x64xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[P]], %{{.+}} : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK: arith.addf
// CHECK: math.fma
func.func @product_and_tile(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %y: tensor<64x64xf32>, %u: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %ab = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %out = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%u, %ab, %y : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%ui: f32, %abi: f32, %yi: f32, %o: f32):
    %sum = arith.addf %abi, %yi : f32
    %r = math.fma %ui, %sum, %ui : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  return %out : tensor<64x64xf32>
}

// A sum of three products inside an expression: left as it is.
// CHECK-LABEL: func.func @three_products
// CHECK: %[[P0:.+]] = linalg.generic {{.+}} outs(%[[Z:.+]] : tensor<64x64xf32>)
// CHECK: %[[P1:.+]] = linalg.generic {{.+}} outs(%[[Z]] : tensor<64x64xf32>)
// CHECK: %[[P2:.+]] = linalg.generic {{.+}} outs(%[[Z]] : tensor<64x64xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[P0]], %[[P1]], %[[P2]] :
// CHECK-COUNT-2: arith.addf
// CHECK: arith.mulf
func.func @three_products(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %u: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %p0 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %p1 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%b, %a : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %p2 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %a : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %out = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%u, %p0, %p1, %p2 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%ui: f32, %i0: f32, %i1: f32, %i2: f32, %o: f32):
    %s0 = arith.addf %i0, %i1 : f32
    %s1 = arith.addf %s0, %i2 : f32
    %r = arith.mulf %ui, %s1 : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  return %out : tensor<64x64xf32>
}
