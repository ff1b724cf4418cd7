// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp --value-tile=16 -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that an explicit value tile reaches a derived backward on register
// tiles: with two (sequence, head) pairs the search takes parallel
// gradients, and the two sequential passes run per value tile of 16
// columns (8 blocks each instead of 2); all three kernels assemble without
// spills.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles {{.*}}parallel-gradients=on {{.*}}value-tile=16 {{.*}}"
// CHECK: remark: hla.chunking = ["linear_attention backward: parallel gradients, the sequential passes in 4 value tiles of 16 columns"]
// LOG: // kernel module main_kernel
// LOG: , 0 bytes spill stores, 0 bytes spill loads
// LOG: // kernel module main_kernel_0
// LOG: , 0 bytes spill stores, 0 bytes spill loads
// LOG: // kernel module main_kernel_1
// LOG: , 0 bytes spill stores, 0 bytes spill loads
func.func @main(%q: tensor<1x130x2x64xbf16>, %k: tensor<1x130x2x64xbf16>, %v: tensor<1x130x2x64xbf16>) -> tensor<1x130x2x64xbf16> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>) -> tensor<1x130x2x64xbf16>
  return %o : tensor<1x130x2x64xbf16>
}
