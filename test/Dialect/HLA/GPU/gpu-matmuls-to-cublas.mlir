// RUN: hla-opt %s --pass-pipeline='builtin.module(func.func(hla-gpu-matmuls-to-cublas))' | FileCheck %s

// Tests that a matrix product on buffers becomes one hla_cuda_gemm call
// (declared once): f32 code 0, batch 1, M N K = 8 16 4, then each
// operand's byte address (aligned pointer + offset x element bytes) and its
// row, column and batch strides from the buffer's strided metadata.

// CHECK: func.func private @hla_cuda_gemm(i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @product
// CHECK-NOT: linalg.matmul
// CHECK: memref.extract_strided_metadata %arg0
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: call @hla_cuda_gemm(%{{.*}}) : (i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
// CHECK-NOT: linalg.matmul
func.func @product(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}
