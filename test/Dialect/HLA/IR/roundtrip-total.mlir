// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.total round-trips, along the default axis and another one.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @time_axis
// CHECK: hla.total #{{.+}}(%{{.+}}, %{{.+}}) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
func.func @time_axis(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>) {
  %P, %r = hla.total #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>)
  return %P, %r : tensor<1x2x4x4xf32>, tensor<1x2xf32>
}

// CHECK-LABEL: func.func @first_axis
// CHECK: hla.total #{{.+}}(%{{.+}}, %{{.+}}) {axis = 0 : i64} : (tensor<16x3x4x4xf32>, tensor<16x3xf32>) -> (tensor<3x4x4xf32>, tensor<3xf32>)
func.func @first_axis(%p: tensor<16x3x4x4xf32>, %rho: tensor<16x3xf32>) -> (tensor<3x4x4xf32>, tensor<3xf32>) {
  %P, %r = hla.total #la(%p, %rho) {axis = 0 : i64} : (tensor<16x3x4x4xf32>, tensor<16x3xf32>) -> (tensor<3x4x4xf32>, tensor<3xf32>)
  return %P, %r : tensor<3x4x4xf32>, tensor<3xf32>
}
