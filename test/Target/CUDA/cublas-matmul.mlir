// REQUIRES: cuda-toolkit
// RUN: hla-opt %s --hla-target=cuda --emit=llvm -o %t.ll
// RUN: FileCheck %s < %t.ll

// Tests that a model graph's matrix products run on cuBLAS: each
// linalg.matmul / linalg.batch_matmul becomes one hla_cuda_gemm call with
// the element code (0 f32, 2 bf16), batch, M, N, K and each operand's
// address and (row, column, batch) strides in elements — a slice of a wider
// tensor keeps its row stride (80); the fills of the results stay kernels.

// CHECK-LABEL: define internal void @__hla_call_main(
// CHECK: call void @hla_cuda_gemm(i32 0, i64 1, i64 200, i64 96, i64 64, i64 {{%[0-9]+}}, i64 80, i64 1, i64 0, i64 {{%[0-9]+}}, i64 96, i64 1, i64 0, i64 {{%[0-9]+}}, i64 96, i64 1, i64 0)
// CHECK: call void @hla_cuda_gemm(i32 2, i64 3, i64 50, i64 30, i64 40, i64 {{%[0-9]+}}, i64 40, i64 1, i64 2000, i64 {{%[0-9]+}}, i64 30, i64 1, i64 1200, i64 {{%[0-9]+}}, i64 30, i64 1, i64 1500)
// CHECK-NOT: call void @hla_cuda_gemm
func.func @main(%x: tensor<200x80xf32>, %w: tensor<64x96xf32>, %a: tensor<3x50x40xbf16>, %b: tensor<3x40x30xbf16>) -> (tensor<200x96xf32>, tensor<3x50x30xbf16>) {
  %xs = tensor.extract_slice %x[0, 8] [200, 64] [1, 1] : tensor<200x80xf32> to tensor<200x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<200x96xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<200x96xf32>) -> tensor<200x96xf32>
  %y = linalg.matmul ins(%xs, %w : tensor<200x64xf32>, tensor<64x96xf32>) outs(%z : tensor<200x96xf32>) -> tensor<200x96xf32>
  %zb = arith.constant 0.0 : bf16
  %eb = tensor.empty() : tensor<3x50x30xbf16>
  %c = linalg.fill ins(%zb : bf16) outs(%eb : tensor<3x50x30xbf16>) -> tensor<3x50x30xbf16>
  %p = linalg.batch_matmul ins(%a, %b : tensor<3x50x40xbf16>, tensor<3x40x30xbf16>) outs(%c : tensor<3x50x30xbf16>) -> tensor<3x50x30xbf16>
  return %y, %p : tensor<200x96xf32>, tensor<3x50x30xbf16>
}
