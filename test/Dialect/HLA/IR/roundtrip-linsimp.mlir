// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.linsimp round-trips with both kernels, and with its favor
// state (M, a, then the anchor halo r, u, valid).

// CHECK-LABEL: func.func @favor
// CHECK: hla.linsimp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {window = 16 : i64}
func.func @favor(%q: tensor<1x32x2x8xf32>, %k: tensor<1x32x2x8xf32>, %v: tensor<1x32x2x8xf32>, %r: tensor<1x32x2x8xf32>, %u: tensor<1x32x2x8xf32>, %omega: tensor<64x8xf32>) -> tensor<1x32x2x8xf32> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 16 : i64} : (tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<64x8xf32>) -> tensor<1x32x2x8xf32>
  return %o : tensor<1x32x2x8xf32>
}

// CHECK-LABEL: func.func @exact
// CHECK: hla.linsimp
// CHECK-SAME: kernel = #hla.kernel<exact>
// CHECK-SAME: scale = 2.500000e-01 : f64
func.func @exact(%q: tensor<1x32x4x8xf32>, %k: tensor<1x32x2x8xf32>, %v: tensor<1x32x2x8xf32>, %r: tensor<1x32x2x8xf32>, %u: tensor<1x32x2x8xf32>, %omega: tensor<64x8xf32>) -> tensor<1x32x4x8xf32> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {kernel = #hla.kernel<exact>, scale = 0.25 : f64} : (tensor<1x32x4x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<64x8xf32>) -> tensor<1x32x4x8xf32>
  return %o : tensor<1x32x4x8xf32>
}

// CHECK-LABEL: func.func @state
// CHECK: hla.linsimp {{.*}} initial_state(
// CHECK-SAME: -> (tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>)
func.func @state(%q: tensor<1x32x2x8xf32>, %k: tensor<1x32x2x8xf32>, %v: tensor<1x32x2x4xf32>, %r: tensor<1x32x2x8xf32>, %u: tensor<1x32x2x4xf32>, %omega: tensor<64x8xf32>,
                 %m0: tensor<1x2x64x4xf32>, %a0: tensor<1x2x64xf32>, %ar: tensor<1x2x3x8xf32>, %au: tensor<1x2x3x4xf32>, %av: tensor<1x2x3xf32>) -> tensor<1x32x2x4xf32> {
  %o:6 = hla.linsimp %q, %k, %v, %r, %u, %omega initial_state(%m0, %a0, %ar, %au, %av) {window = 4 : i64} : (tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x4xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x4xf32>, tensor<64x8xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) -> (tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>)
  return %o#0 : tensor<1x32x2x4xf32>
}
