// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that hla.random_features round-trips, with its default seed elided.

// CHECK-LABEL: func.func @omega
// CHECK: hla.random_features {seed = 7 : i64} : tensor<256x64xf32>
// CHECK: hla.random_features : tensor<16x4xbf16>
func.func @omega() -> (tensor<256x64xf32>, tensor<16x4xbf16>) {
  %a = hla.random_features {seed = 7 : i64} : tensor<256x64xf32>
  %b = hla.random_features : tensor<16x4xbf16>
  return %a, %b : tensor<256x64xf32>, tensor<16x4xbf16>
}
