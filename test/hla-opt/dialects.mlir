// RUN: hla-opt %s | FileCheck %s

// Tests that hla-opt parses the dialects a model graph mixes with hla ops:
// func, arith, math, tensor and linalg.

// CHECK-LABEL: func.func @block
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape
// CHECK: hla.hla2
// CHECK: math.rsqrt
// CHECK: arith.addf
func.func @block(%x: tensor<64x32xf32>, %w: tensor<32x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x32xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%init : tensor<64x32xf32>) -> tensor<64x32xf32>
  %proj = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x32xf32>) outs(%filled : tensor<64x32xf32>) -> tensor<64x32xf32>
  %q = tensor.expand_shape %proj [[0, 1], [2, 3]] output_shape [1, 64, 2, 16] : tensor<64x32xf32> into tensor<1x64x2x16xf32>
  %o = hla.hla2 %q, %q, %q : (tensor<1x64x2x16xf32>, tensor<1x64x2x16xf32>, tensor<1x64x2x16xf32>) -> tensor<1x64x2x16xf32>
  %flat = tensor.collapse_shape %o [[0, 1], [2, 3]] : tensor<1x64x2x16xf32> into tensor<64x32xf32>
  %r = math.rsqrt %flat : tensor<64x32xf32>
  %sum = arith.addf %r, %x : tensor<64x32xf32>
  return %sum : tensor<64x32xf32>
}
