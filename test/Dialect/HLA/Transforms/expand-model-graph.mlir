// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand rewrites only attention ops and leaves the model
// graph around them (projections, reshapes) alone.

// CHECK-LABEL: func.func @block
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape
// CHECK-NOT: hla.ahla
// CHECK: hla.segment
// CHECK: hla.scan
// CHECK: hla.readout
// CHECK: tensor.collapse_shape
func.func @block(%x: tensor<64x32xf32>, %w: tensor<32x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x32xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%init : tensor<64x32xf32>) -> tensor<64x32xf32>
  %proj = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x32xf32>) outs(%filled : tensor<64x32xf32>) -> tensor<64x32xf32>
  %q = tensor.expand_shape %proj [[0, 1], [2, 3]] output_shape [1, 64, 2, 16] : tensor<64x32xf32> into tensor<1x64x2x16xf32>
  %o = hla.ahla %q, %q, %q : (tensor<1x64x2x16xf32>, tensor<1x64x2x16xf32>, tensor<1x64x2x16xf32>) -> tensor<1x64x2x16xf32>
  %flat = tensor.collapse_shape %o [[0, 1], [2, 3]] : tensor<1x64x2x16xf32> into tensor<64x32xf32>
  return %flat : tensor<64x32xf32>
}
