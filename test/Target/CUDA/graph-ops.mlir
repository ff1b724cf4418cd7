// REQUIRES: cuda-toolkit
// RUN: hla-opt %s --hla-target=cuda --emit=llvm -o %t.ll
// RUN: FileCheck %s < %t.ll

// Tests that a model graph's own ops run as kernels next to the attention
// op's: here the residual add after hla2 is a loop of row blocks, so the
// host code launches two kernels (the chunk loop's, then the add's) and
// touches no device memory itself.

// CHECK: call {{.*}}@mgpuLaunchKernel
// CHECK: call {{.*}}@mgpuLaunchKernel
// CHECK-NOT: call {{.*}}@mgpuLaunchKernel
func.func @main(%q: tensor<1x64x2x16xbf16>, %k: tensor<1x64x2x16xbf16>, %v: tensor<1x64x2x16xbf16>) -> tensor<1x64x2x16xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>) -> tensor<1x64x2x16xbf16>
  %r = arith.addf %o, %v : tensor<1x64x2x16xbf16>
  return %r : tensor<1x64x2x16xbf16>
}
