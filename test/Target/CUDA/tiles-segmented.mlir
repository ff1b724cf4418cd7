// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/k.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// Tests the artefact's choice for few (sequence, head) pairs: four heads of
// one sequence give the persistent register-tile kernel 8 blocks (two value
// tiles each), fewer than half of the GPU's 132 SMs; the segmented form on
// register tiles is kept instead (10 runs of 7 chunks per (sequence, head):
// hla-chunk's model weighs the blocks against the summaries the last run
// folds first), a summary kernel and a readout kernel.

// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles{{.*}}schedule=segmented segments=0{{.*}}"
// FILES: k.main_kernel.cubin
// FILES: k.main_kernel_0.cubin
func.func @main(%q: tensor<1x4096x4x64xbf16>) -> tensor<1x4096x4x64xbf16> {
  %o = hla.linear_attention %q, %q, %q : (tensor<1x4096x4x64xbf16>, tensor<1x4096x4x64xbf16>, tensor<1x4096x4x64xbf16>) -> tensor<1x4096x4x64xbf16>
  return %o : tensor<1x4096x4x64xbf16>
}
