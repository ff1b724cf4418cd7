// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

#ls = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m])
  token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b)
  readout(num = f.T * M, den = f.T * a)>

// Tests that hla.anchor_vjp (LinSimp's backward) round-trips, with and
// without the state (M, a, then the anchor ring r, u, valid).

// CHECK-LABEL: func.func @vjp
// CHECK: hla.anchor_vjp #{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) omega(%{{.*}}) cotangent(%{{.*}}) {scale = 5.000000e-01 : f64, window = 4 : i64}
func.func @vjp(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %r: tensor<1x8x2x4xf32>, %u: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>) {
  %g0:6 = hla.anchor_vjp #ls (%q, %k, %v, %r, %u) omega(%om) cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>)
  return %g0#0, %g0#1, %g0#2, %g0#3, %g0#4, %g0#5 : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>
}

// CHECK-LABEL: func.func @state
// CHECK: hla.anchor_vjp #{{.*}} init(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) cotangent(%{{.*}}) final_cotangent(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
func.func @state(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %r: tensor<1x8x2x4xf32>, %u: tensor<1x8x2x3xf32>, %om: tensor<16x4xf32>, %g: tensor<1x8x2x3xf32>,
                 %m0: tensor<1x2x16x3xf32>, %a0: tensor<1x2x16xf32>, %ar: tensor<1x2x3x4xf32>, %au: tensor<1x2x3x3xf32>, %av: tensor<1x2x3xf32>) -> tensor<1x2x3x4xf32> {
  %g0:11 = hla.anchor_vjp #ls (%q, %k, %v, %r, %u) omega(%om) init(%m0, %a0, %ar, %au, %av) cotangent(%g) final_cotangent(%m0, %a0, %ar, %au, %av) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x2x16x3xf32>, tensor<1x2x16xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3xf32>, tensor<1x8x2x3xf32>, tensor<1x2x16x3xf32>, tensor<1x2x16xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<16x4xf32>, tensor<1x2x16x3xf32>, tensor<1x2x16xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3xf32>)
  return %g0#8 : tensor<1x2x3x4xf32>
}
