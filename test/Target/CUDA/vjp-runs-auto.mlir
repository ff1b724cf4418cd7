// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that the search cuts a derived backward's passes over chunks into
// runs where its (sequence, head) pairs are few (16 pairs, 128 chunks of 64
// tokens): the segmented schedule on register tiles, whose runs give the
// passes enough blocks that the tokens' gradients stay in the reverse pass
// (no parallel gradients): four kernels (the runs' totals, the states
// entering the chunks, the runs' β, λ per chunk with the gradients), none
// spilling.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles {{.*}}parallel-gradients=off {{.*}}schedule=segmented {{.*}}"
// CHECK: remark: hla.chunking = ["linear_attention backward: two passes, the sequential passes in 8 runs of 16 chunks"]
// LOG-COUNT-4: , 0 bytes spill stores, 0 bytes spill loads
// LOG-NOT: kernel module
func.func @main(%q: tensor<1x8192x16x64xbf16>, %k: tensor<1x8192x16x64xbf16>, %v: tensor<1x8192x16x64xbf16>) -> tensor<1x8192x16x64xbf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x8192x16x64xbf16>, tensor<1x8192x16x64xbf16>, tensor<1x8192x16x64xbf16>) -> tensor<1x8192x16x64xbf16>
  return %o : tensor<1x8192x16x64xbf16>
}
