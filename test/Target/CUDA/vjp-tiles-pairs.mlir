// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that the search keeps the tokens' gradients in the reverse pass of
// a derived backward on register tiles when its (sequence, head) pairs
// fill the GPU (8 × 16 = 128 blocks per pass): two kernels, neither
// spilling; parallel gradients are off.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles {{.*}}parallel-gradients=off {{.*}}"
// LOG: // kernel module main_kernel
// LOG: , 0 bytes spill stores, 0 bytes spill loads
// LOG: // kernel module main_kernel_0
// LOG: , 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: // kernel module main_kernel_1
func.func @main(%q: tensor<8x256x16x64xbf16>, %k: tensor<8x256x16x64xbf16>, %v: tensor<8x256x16x64xbf16>) -> tensor<8x256x16x64xbf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<8x256x16x64xbf16>, tensor<8x256x16x64xbf16>, tensor<8x256x16x64xbf16>) -> tensor<8x256x16x64xbf16>
  return %o : tensor<8x256x16x64xbf16>
}
