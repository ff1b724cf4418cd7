// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --cuda-schedule=persistent --emit=ptx -o %t/k.ptx
// RUN: FileCheck %s < %t/k.ptx

// Tests that a float32 op keeps float32 arithmetic on the GPU: its chunk
// contractions are fused multiply-adds in every thread, not bf16 tensor-core
// instructions (whose operand rounding the f32 tolerance does not allow).

// CHECK: .visible .entry main_kernel(
// CHECK-NOT: mma.sync
// CHECK: fma.rn.f32
// CHECK-NOT: mma.sync
func.func @main(%q: tensor<1x100x2x32xf32>, %k: tensor<1x100x2x32xf32>, %v: tensor<1x100x2x32xf32>) -> tensor<1x100x2x32xf32> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x100x2x32xf32>, tensor<1x100x2x32xf32>, tensor<1x100x2x32xf32>) -> tensor<1x100x2x32xf32>
  return %o : tensor<1x100x2x32xf32>
}
