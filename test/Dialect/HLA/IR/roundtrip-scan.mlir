// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.scan round-trips inclusive and exclusive, with an initial
// state, final states, another axis, and packed sequences.

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @inclusive
// CHECK: hla.scan #{{.+}}(%{{.+}}, %{{.+}}) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4x4xf32>
func.func @inclusive(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>) -> tensor<1x8x2x4x4xf32> {
  %s = hla.scan #la(%p, %rho) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x4x4xf32>
  return %s : tensor<1x8x2x4x4xf32>
}

// CHECK-LABEL: func.func @exclusive_init_final
// CHECK: hla.scan exclusive #{{.+}}(%{{.+}}, %{{.+}}) init(%{{.+}}) :
// CHECK-SAME: -> (tensor<1x8x2x4x4xf32>, tensor<1x2x4x4xf32>)
func.func @exclusive_init_final(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>, %p0: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %s, %f = hla.scan exclusive #la(%p, %rho) init(%p0) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x2x4x4xf32>)
  return %f : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @axis
// CHECK: hla.scan #{{.+}}(%{{.+}}, %{{.+}}) {axis = 0 : i64} : (tensor<16x3x4x4xf32>, tensor<16x3xf32>) -> (tensor<16x3x4x4xf32>, tensor<3x4x4xf32>)
func.func @axis(%p: tensor<16x3x4x4xf32>, %rho: tensor<16x3xf32>) -> tensor<3x4x4xf32> {
  %s, %f = hla.scan #la(%p, %rho) {axis = 0 : i64} : (tensor<16x3x4x4xf32>, tensor<16x3xf32>) -> (tensor<16x3x4x4xf32>, tensor<3x4x4xf32>)
  return %f : tensor<3x4x4xf32>
}

// CHECK-LABEL: func.func @packed
// CHECK: hla.scan #{{.+}}(%{{.+}}, %{{.+}}) init(%{{.+}}) cu_seqlens(%{{.+}}) : ({{.*}}, tensor<5xi32>) -> (tensor<1x8x2x4x4xf32>, tensor<4x2x4x4xf32>)
func.func @packed(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>, %p0: tensor<4x2x4x4xf32>, %cu: tensor<5xi32>) -> tensor<4x2x4x4xf32> {
  %s, %f = hla.scan #la(%p, %rho) init(%p0) cu_seqlens(%cu) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>, tensor<4x2x4x4xf32>, tensor<5xi32>) -> (tensor<1x8x2x4x4xf32>, tensor<4x2x4x4xf32>)
  return %f : tensor<4x2x4x4xf32>
}
