// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that the search puts the derived backward of linear attention at
// d = 64 (bf16, a ragged tail) on register tiles: 64-token chunks and, two
// (sequence, head) pairs leaving the GPU idle in the sequential passes,
// parallel gradients: three kernels (the states entering the chunks, λ
// from the last chunk to the first, the tokens' gradients per chunk), all
// assembled without spills. Value tiles are not chosen for a backward
// (vjp-value-tiles.mlir). (Pairs enough: vjp-tiles-pairs.mlir.)
// CHECK: remark: hla.cuda_options = "{{.*}}chunk-size=64 {{.*}}generator=tiles {{.*}}parallel-gradients=on {{.*}}value-tile=0 {{.*}}"
// CHECK: remark: hla.chunking = ["linear_attention backward: parallel gradients"]
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
