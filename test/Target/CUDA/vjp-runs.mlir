// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp --cuda-schedule=segmented -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that the segmented schedule, asked for, cuts a derived backward's
// passes over chunks into runs on register tiles (two (sequence, head)
// pairs, 17 chunks of 64 tokens, a ragged tail; 5 runs still leave the
// GPU idle, so parallel gradients): five kernels (the runs' totals, the
// states entering the chunks, the runs' β, λ per chunk, the gradients),
// none spilling.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles {{.*}}parallel-gradients=on {{.*}}schedule=segmented {{.*}}"
// CHECK: remark: hla.chunking = ["linear_attention backward: parallel gradients, the sequential passes in 5 runs of 4 chunks"]
// LOG-COUNT-5: , 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: kernel module
func.func @main(%q: tensor<1x1050x2x64xbf16>, %k: tensor<1x1050x2x64xbf16>, %v: tensor<1x1050x2x64xbf16>) -> tensor<1x1050x2x64xbf16> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x1050x2x64xbf16>, tensor<1x1050x2x64xbf16>, tensor<1x1050x2x64xbf16>) -> tensor<1x1050x2x64xbf16>
  return %o : tensor<1x1050x2x64xbf16>
}
