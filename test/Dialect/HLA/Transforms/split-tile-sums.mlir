// RUN: hla-opt %s --split-input-file --hla-split-tile-sums | FileCheck %s

// Tests that a sum of four terms, two of them reading products (one scaled,
// one read transposed and masked), becomes a chain: the rest of the sum
// (x + m, which reads no product), then + 2·P, then + m·Rᵀ and the
// truncation to bf16; each generic reads only the inputs its term needs.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$TR:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @sum
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<64x64xf32>, %[[Y:[^:]+]]: tensor<64x64xf32>, %[[M:[^:]+]]: tensor<64x64xf32>)
// CHECK:         %[[P:.+]] = linalg.generic {{.*}} ins(%[[X]], %[[Y]] :
// CHECK:         %[[R:.+]] = linalg.generic {{.*}} ins(%[[Y]], %[[X]] :
// CHECK:         %[[S0:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[M]], %[[X]] : tensor<64x64xf32>, tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK-NEXT:    ^bb0(%[[A0:[^:]+]]: f32, %[[A1:[^:]+]]: f32,
// CHECK-NEXT:      %[[T0:.+]] = arith.addf %[[A1]], %[[A0]] : f32
// CHECK-NEXT:      linalg.yield %[[T0]]
// CHECK:         %[[S1:.+]] = linalg.generic {{.*}} ins(%[[S0]], %[[P]] : tensor<64x64xf32>, tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK-NEXT:    ^bb0(%[[B0:[^:]+]]: f32, %[[B1:[^:]+]]: f32,
// CHECK-NEXT:      %[[T1:.+]] = arith.mulf %[[B1]], %{{.*}} : f32
// CHECK-NEXT:      %[[T2:.+]] = arith.addf %[[B0]], %[[T1]] : f32
// CHECK-NEXT:      linalg.yield %[[T2]]
// CHECK:         %[[S2:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$TR]], #[[$ID]]], {{.*}} ins(%[[S1]], %[[M]], %[[R]] : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xbf16>)
// CHECK-NEXT:    ^bb0(%[[C0:[^:]+]]: f32, %[[C1:[^:]+]]: f32, %[[C2:[^:]+]]: f32,
// CHECK-NEXT:      %[[T3:.+]] = arith.mulf %[[C1]], %[[C2]] : f32
// CHECK-NEXT:      %[[T4:.+]] = arith.addf %[[C0]], %[[T3]] : f32
// CHECK-NEXT:      %[[T5:.+]] = arith.truncf %[[T4]] : f32 to bf16
// CHECK-NEXT:      linalg.yield %[[T5]]
// CHECK:         return %[[S2]]
#id = affine_map<(i, j) -> (i, j)>
#tr = affine_map<(i, j) -> (j, i)>
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
func.func @sum(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>, %m: tensor<64x64xf32>) -> tensor<64x64xbf16> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %t = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y, %x : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %t = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %eb = tensor.empty() : tensor<64x64xbf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id, #tr, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %p, %m, %r : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%eb : tensor<64x64xbf16>) {
  ^bb0(%xi: f32, %pi: f32, %mi: f32, %ri: f32, %o: bf16):
    %cp = arith.mulf %pi, %two : f32
    %mr = arith.mulf %mi, %ri : f32
    %s0 = arith.addf %xi, %cp : f32
    %s1 = arith.addf %s0, %mi : f32
    %s2 = arith.addf %s1, %mr : f32
    %t = arith.truncf %s2 : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x64xbf16>
  return %sum : tensor<64x64xbf16>
}

// -----

// Tests that a sum of two terms is left as it is, and that a term whose
// ops another term shares (here the scaled product 2·P, added twice) is not
// taken: the sum x + 2·P + 2·P·y has no term of its own reading a product.
// CHECK-LABEL: func.func @kept
// CHECK:         %[[P:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         %[[TWO:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[P]] :
// CHECK:         %[[SHARED:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[P]], %{{.*}} :
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[TWO]], %[[SHARED]]
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
func.func @kept(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %t = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %two_terms = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %p : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%xi: f32, %pi: f32, %o: f32):
    %s = arith.addf %xi, %pi : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %shared = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %p, %y : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%xi: f32, %pi: f32, %yi: f32, %o: f32):
    %cp = arith.mulf %pi, %two : f32
    %cpy = arith.mulf %cp, %yi : f32
    %s0 = arith.addf %xi, %cp : f32
    %s1 = arith.addf %s0, %cpy : f32
    linalg.yield %s1 : f32
  } -> tensor<64x64xf32>
  return %two_terms, %shared : tensor<64x64xf32>, tensor<64x64xf32>
}
