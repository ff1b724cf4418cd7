// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp --parallel-gradients=on -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that the search keeps a derived backward on register tiles that
// spill rather than on the shared-memory phases when every tile choice
// spills (hla2, bf16, d = 64, parallel gradients asked for: its third
// kernel spills at every value tile): the first spilling choice past one
// warpgroup, full width, is kept; three kernels, the third spilling.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles {{.*}}parallel-gradients=on {{.*}}value-tile=0 {{.*}}"
// LOG: // kernel module main_kernel
// LOG: , 0 bytes spill stores, 0 bytes spill loads
// LOG: // kernel module main_kernel_0
// LOG: , 0 bytes spill stores
// LOG: // kernel module main_kernel_1
// LOG: , {{[1-9][0-9]*}} bytes spill stores
func.func @main(%q: tensor<8x256x16x64xbf16>, %k: tensor<8x256x16x64xbf16>, %v: tensor<8x256x16x64xbf16>) -> tensor<8x256x16x64xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<8x256x16x64xbf16>, tensor<8x256x16x64xbf16>, tensor<8x256x16x64xbf16>) -> tensor<8x256x16x64xbf16>
  return %o : tensor<8x256x16x64xbf16>
}
