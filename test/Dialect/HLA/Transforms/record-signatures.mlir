// RUN: hla-opt %s --hla-record-signatures | FileCheck %s

// Tests that hla-record-signatures records the tensor signature of every
// public function with static shapes (name|inputs|outputs, dtype:shape),
// skips private functions and functions it cannot describe, and marks the
// public functions' tensor arguments read-only for bufferization.

// CHECK: module attributes {hla.signatures = {model = "model|f32:1x8x2x4,bf16:4x4,i32:3|f16:,i64:2"}}
// CHECK-LABEL: func.func @model
// CHECK-SAME: (%{{.+}}: tensor<1x8x2x4xf32> {bufferization.writable = false}, %{{.+}}: tensor<4x4xbf16> {bufferization.writable = false}, %{{.+}}: tensor<3xi32> {bufferization.writable = false})
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%{{.+}}: tensor<4xf32>)
func.func @model(%a: tensor<1x8x2x4xf32>, %b: tensor<4x4xbf16>, %c: tensor<3xi32>) -> (tensor<f16>, tensor<2xi64>) {
  %0 = tensor.empty() : tensor<f16>
  %1 = tensor.empty() : tensor<2xi64>
  return %0, %1 : tensor<f16>, tensor<2xi64>
}
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}
