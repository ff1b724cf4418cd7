// RUN: hla-opt %s --split-input-file --test-hla-reverse-diff --cse | FileCheck %s

// Tests a contraction's rule: each input's cotangent is a generic over the
// same loops whose output is read like that input (its dims parallel, the
// rest reductions), its body the cotangent times the other factor.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
// CHECK-LABEL: func.func @contract_vjp
// CHECK-SAME:    (%[[A:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: tensor<8x2xf32>, %[[DY:[^:]+]]: tensor<4x2xf32>)
// CHECK:         %[[DA:.+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[A]], %[[B]], %[[DY]] : {{.*}}) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-NEXT:    ^bb0(%{{[^:]+}}: f32, %[[IB:[^:]+]]: f32, %[[IDY:[^:]+]]: f32, %[[ACC:[^:]+]]: f32):
// CHECK:           %[[T:.+]] = arith.mulf %[[IDY]], %[[IB]] : f32
// CHECK:           %[[S:.+]] = arith.addf %[[ACC]], %[[T]] : f32
// CHECK:           linalg.yield %[[S]]
// CHECK:         %[[DB:.+]] = linalg.generic {{{.*}}iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[A]], %[[B]], %[[DY]] : {{.*}}) outs(%{{.*}} : tensor<8x2xf32>)
// CHECK:         return %[[DA]], %[[DB]] : tensor<4x8xf32>, tensor<8x2xf32>
func.func @contract(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Tests an elementwise map with a mask: the tangent of select(c, exp(x), 0)
// is select(c, exp(x), 0) times x's tangent; the mask's index arithmetic
// is cloned, not differentiated.
#id = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func.func @masked_exp_vjp
// CHECK:         linalg.generic {{{.*}}iterator_types = ["parallel", "parallel"]}
// CHECK:           arith.cmpi sle
// CHECK:           %[[E:.+]] = math.exp
// CHECK:           %[[M:.+]] = arith.select %{{.+}}, %[[E]], %{{.+}} : f32
// CHECK:           arith.mulf %{{.+}}, %[[M]] : f32
func.func @masked_exp(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = arith.cmpi sle, %j, %i : index
    %ex = math.exp %in : f32
    %z = arith.constant 0.0 : f32
    %s = arith.select %c, %ex, %z : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Tests that an input read at two positions gets one cotangent generic per
// position, summed.
#r = affine_map<(i, j) -> (i)>
#c = affine_map<(i, j) -> (j)>
#o = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func.func @outer_vjp
// CHECK:         %[[D0:.+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]}
// CHECK:         %[[D1:.+]] = linalg.generic {{{.*}}iterator_types = ["reduction", "parallel"]}
// CHECK:         %[[S:.+]] = linalg.generic {{{.*}}} ins(%[[D0]], %[[D1]] : tensor<4xf32>, tensor<4xf32>)
// CHECK:           arith.addf
// CHECK:         return %[[S]]
func.func @outer(%x: tensor<4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#r, #c, #o], iterator_types = ["parallel", "parallel"]}
      ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Tests the slices: extract_slice's source gets the cotangent inserted into
// zeros; insert_slice's source gets the cotangent's slice and its
// destination the cotangent with zeros in the slice.
// CHECK-LABEL: func.func @slices_vjp
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<8xf32>, %[[D:[^:]+]]: tensor<4xf32>, %[[DY:[^:]+]]: tensor<4xf32>)
// CHECK:         %[[DS:.+]] = tensor.extract_slice %[[DY]][2] [2] [1] : tensor<4xf32> to tensor<2xf32>
// CHECK:         %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2xf32>) -> tensor<2xf32>
// CHECK:         %[[DD:.+]] = tensor.insert_slice %[[Z]] into %[[DY]][2] [2] [1] : tensor<2xf32> into tensor<4xf32>
// CHECK:         %[[ZX:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8xf32>) -> tensor<8xf32>
// CHECK:         %[[DX:.+]] = tensor.insert_slice %[[DS]] into %[[ZX]][5] [2] [1] : tensor<2xf32> into tensor<8xf32>
// CHECK:         return %[[DX]], %[[DD]] : tensor<8xf32>, tensor<4xf32>
func.func @slices(%x: tensor<8xf32>, %d: tensor<4xf32>) -> tensor<4xf32> {
  %s = tensor.extract_slice %x[5] [2] [1] : tensor<8xf32> to tensor<2xf32>
  %y = tensor.insert_slice %s into %d[2] [2] [1] : tensor<2xf32> into tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that what does not depend on the inputs is not differentiated (the
// mask made by a generic without inputs), and that an input nothing reads
// gets zeros.
#id = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func.func @inactive_vjp
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x2xf32>, %[[U:[^:]+]]: tensor<2x2xf32>, %[[DY:[^:]+]]: tensor<2x2xf32>)
// CHECK:         %[[M:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2xf32>)
// CHECK:         %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK:         %[[DX:.+]] = linalg.generic {{.*}} ins(%[[X]], %[[M]], %[[DY]] : {{.*}}) outs(%[[Z]] : tensor<2x2xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[DX]], %[[Z]]
func.func @inactive(%x: tensor<2x2xf32>, %unused: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<2x2xf32>
  %m = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<2x2xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %f = arith.index_cast %i : index to i32
    %v = arith.sitofp %f : i32 to f32
    linalg.yield %v : f32
  } -> tensor<2x2xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Tests the reshapes: expand_shape's source gets the cotangent collapsed,
// collapse_shape's the cotangent expanded, with the same reassociation.
// CHECK-LABEL: func.func @reshapes_vjp
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<8xf32>, %[[DY:[^:]+]]: tensor<2x4xf32>)
// CHECK:         %[[C:.+]] = tensor.collapse_shape %[[DY]] {{\[}}[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK:         %[[E:.+]] = tensor.expand_shape %[[C]] {{\[}}[0, 1]] output_shape [4, 2] : tensor<8xf32> into tensor<4x2xf32>
// CHECK:         %[[D:.+]] = tensor.collapse_shape %[[E]] {{\[}}[0, 1]] : tensor<4x2xf32> into tensor<8xf32>
// CHECK:         return %[[D]] : tensor<8xf32>
func.func @reshapes(%x: tensor<8xf32>) -> tensor<2x4xf32> {
  %a = tensor.expand_shape %x [[0, 1]] output_shape [4, 2] : tensor<8xf32> into tensor<4x2xf32>
  %b = tensor.collapse_shape %a [[0, 1]] : tensor<4x2xf32> into tensor<8xf32>
  %y = tensor.expand_shape %b [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
