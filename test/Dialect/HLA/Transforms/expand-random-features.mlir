// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand replaces hla.random_features by its constant: the
// generator's output for seed 1 and m = 3, d = 2 is pinned here (the
// Python twin, hla.random_features(3, 2, 1), gives the same digits), as
// is its rounding to bf16.

// CHECK-LABEL: func.func @omega
// CHECK: %[[C:.+]] = arith.constant dense<{{\[}}[-0.19475859076579355, -1.5713162493954687], [-1.3358748183637232, 0.16557653315437004], [0.25045903870525804, -1.229820695392098]]> : tensor<3x2xf64>
// CHECK-NOT: hla.random_features
// CHECK: return %[[C]]
func.func @omega() -> tensor<3x2xf64> {
  %o = hla.random_features {seed = 1 : i64} : tensor<3x2xf64>
  return %o : tensor<3x2xf64>
}

// CHECK-LABEL: func.func @omega_bf16
// CHECK: arith.constant dense<{{\[}}[-1.943360e-01, -1.570310e+00], [-1.335940e+00, 1.660160e-01], [2.500000e-01, -1.226560e+00]]> : tensor<3x2xbf16>
func.func @omega_bf16() -> tensor<3x2xbf16> {
  %o = hla.random_features {seed = 1 : i64} : tensor<3x2xbf16>
  return %o : tensor<3x2xbf16>
}
