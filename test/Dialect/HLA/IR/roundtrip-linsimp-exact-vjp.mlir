// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.linsimp_exact_vjp (the exact kernel's backward) round-trips.

// CHECK-LABEL: func.func @vjp
// CHECK: hla.linsimp_exact_vjp %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} cotangent(%{{.*}}) {scale = 5.000000e-01 : f64, window = 4 : i64}
func.func @vjp(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x3xf32>, %r: tensor<1x8x2x4xf32>, %u: tensor<1x8x2x3xf32>, %g: tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>) {
  %dq, %dk, %dv, %dr, %du = hla.linsimp_exact_vjp %q, %k, %v, %r, %u cotangent(%g) {window = 4 : i64, scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x3xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>)
  return %dq, %dk, %dv, %dr, %du : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x3xf32>
}
