// RUN: hla-opt %s --hla-accumulate-tile-products | FileCheck %s

// Tests that hla-accumulate-tile-products leaves the sums it cannot chain:
// a product read transposed, a product another op reads too, a product
// starting from a nonzero fill, and a product added with a coefficient.

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @transposed
// CHECK: %[[P:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<64x64xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[P]] : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK: arith.addf
func.func @transposed(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %ab = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #t, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %ab : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%xi: f32, %abi: f32, %o: f32):
    %u = arith.addf %xi, %abi : f32
    linalg.yield %u : f32
  } -> tensor<64x64xf32>
  return %sum : tensor<64x64xf32>
}

// CHECK-LABEL: func.func @read_twice
// CHECK: %[[P:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<64x64xf32>)
// CHECK: %[[S:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[P]] : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK: arith.addf
// CHECK: return %[[S]], %[[P]]
func.func @read_twice(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = tensor.empty() : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %ab = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %ab : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%xi: f32, %abi: f32, %o: f32):
    %u = arith.addf %xi, %abi : f32
    linalg.yield %u : f32
  } -> tensor<64x64xf32>
  return %sum, %ab : tensor<64x64xf32>, tensor<64x64xf32>
}

// CHECK-LABEL: func.func @nonzero_start
// CHECK: %[[P:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<64x64xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[P]] : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK: arith.addf
func.func @nonzero_start(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %one = arith.constant 1.0 : f32
  %z = linalg.fill ins(%one : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %ab = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %ab : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%xi: f32, %abi: f32, %o: f32):
    %u = arith.addf %xi, %abi : f32
    linalg.yield %u : f32
  } -> tensor<64x64xf32>
  return %sum : tensor<64x64xf32>
}

// CHECK-LABEL: func.func @scaled
// CHECK: %[[P:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<64x64xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[P]] : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @scaled(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %ab = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %ab : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%xi: f32, %abi: f32, %o: f32):
    %h = arith.mulf %abi, %half : f32
    %u = arith.addf %xi, %h : f32
    linalg.yield %u : f32
  } -> tensor<64x64xf32>
  return %sum : tensor<64x64xf32>
}
