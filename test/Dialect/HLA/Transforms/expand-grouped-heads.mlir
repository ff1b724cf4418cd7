// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand keeps grouped K/V heads un-repeated: hla.segment
// takes the two-head keys and values and makes eight-head segments.

// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x8x8x4xf16>, %[[K:[^:]+]]: tensor<2x8x2x4xf16>, %[[V:[^:]+]]: tensor<2x8x2x4xf16>)
// CHECK: hla.segment #{{.+}}(%[[Q]], %[[K]], %[[V]]) : (tensor<2x8x8x4xf16>, tensor<2x8x2x4xf16>, tensor<2x8x2x4xf16>)
// CHECK-SAME: -> (tensor<2x8x8x4x4xf32>, tensor<2x8x8x4x4xf32>, tensor<2x8x8x4x4xf32>)
// CHECK: hla.readout {{.*}} -> tensor<2x8x8x4xf16>
func.func @grouped(%q: tensor<2x8x8x4xf16>, %k: tensor<2x8x2x4xf16>, %v: tensor<2x8x2x4xf16>) -> tensor<2x8x8x4xf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<2x8x8x4xf16>, tensor<2x8x2x4xf16>, tensor<2x8x2x4xf16>) -> tensor<2x8x8x4xf16>
  return %o : tensor<2x8x8x4xf16>
}
