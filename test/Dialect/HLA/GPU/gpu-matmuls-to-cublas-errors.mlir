// RUN: hla-opt %s --pass-pipeline='builtin.module(func.func(hla-gpu-matmuls-to-cublas))' -split-input-file -verify-diagnostics

// Tests the diagnostics of hla-gpu-matmuls-to-cublas: operands of different
// element types (a widening product), and element types cuBLAS's f32
// accumulation path does not run.

func.func @mixed(%a: memref<8x4xbf16>, %b: memref<4x16xbf16>, %c: memref<8x16xf32>) {
  // expected-error @+1 {{hla-gpu-matmuls-to-cublas: cuBLAS runs products of f32, f16 or bf16 operands of one element type}}
  linalg.matmul ins(%a, %b : memref<8x4xbf16>, memref<4x16xbf16>) outs(%c : memref<8x16xf32>)
  return
}

// -----

func.func @doubles(%a: memref<8x4xf64>, %b: memref<4x16xf64>, %c: memref<8x16xf64>) {
  // expected-error @+1 {{hla-gpu-matmuls-to-cublas: cuBLAS runs products of f32, f16 or bf16 operands of one element type}}
  linalg.matmul ins(%a, %b : memref<8x4xf64>, memref<4x16xf64>) outs(%c : memref<8x16xf64>)
  return
}
