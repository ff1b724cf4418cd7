// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand threads an initial state into the scan's init and
// takes the final state from the scan's final results.

// CHECK-LABEL: func.func @hla2_state
// CHECK-SAME: %[[S0:[^:]+]]: tensor<1x2x4x4xf32>, %[[C0:[^:]+]]: tensor<1x2x4x6xf32>, %[[G0:[^:]+]]: tensor<1x2x4x6xf32>)
// CHECK: %[[SEG:.+]]:3 = hla.segment
// CHECK: %[[SC:.+]]:6 = hla.scan #{{.+}}(%[[SEG]]#0, %[[SEG]]#1, %[[SEG]]#2) init(%[[S0]], %[[C0]], %[[G0]])
// CHECK-SAME: -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x6xf32>, tensor<1x8x2x4x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>)
// CHECK: %[[O:.+]] = hla.readout #{{.+}}(%{{.+}}) state(%[[SC]]#0, %[[SC]]#1, %[[SC]]#2)
// CHECK: return %[[O]], %[[SC]]#3, %[[SC]]#4, %[[SC]]#5
func.func @hla2_state(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %s0: tensor<1x2x4x4xf32>, %c0: tensor<1x2x4x6xf32>, %g0: tensor<1x2x4x6xf32>)
    -> (tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>) {
  %o, %s, %c, %g = hla.hla2 %q, %k, %v initial_state(%s0, %c0, %g0) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>) -> (tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>)
  return %o, %s, %c, %g : tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>
}

// CHECK-LABEL: func.func @final_only
// CHECK: %[[SC:.+]]:2 = hla.scan #{{.+}}(%{{.+}}) : (tensor<1x8x2x4x6xf32>)
// CHECK-NOT: init
// CHECK: return %{{.+}}, %[[SC]]#1
func.func @final_only(%q: tensor<1x8x2x4xbf16>, %k: tensor<1x8x2x4xbf16>, %v: tensor<1x8x2x6xbf16>) -> (tensor<1x8x2x6xbf16>, tensor<1x2x4x6xf32>) {
  %o, %p = hla.linear_attention %q, %k, %v : (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x6xbf16>) -> (tensor<1x8x2x6xbf16>, tensor<1x2x4x6xf32>)
  return %o, %p : tensor<1x8x2x6xbf16>, tensor<1x2x4x6xf32>
}
