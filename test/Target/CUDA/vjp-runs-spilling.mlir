// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp --cuda-schedule=segmented -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that where every tile choice spills (hla2's backward, bf16, d = 64)
// the spilling tiles the search keeps stay in the schedule asked for: the
// segmented one, the passes over chunks in runs (10 chunks, two (sequence,
// head) pairs, parallel gradients), the gradients' kernel spilling.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles {{.*}}parallel-gradients=on {{.*}}schedule=segmented {{.*}}"
// CHECK: remark: hla.chunking = ["hla2 backward: parallel gradients, the sequential passes in 4 runs of 3 chunks"]
// LOG-COUNT-4: , 0 bytes spill stores, 0 bytes spill loads
// LOG: , {{[1-9][0-9]*}} bytes spill stores
func.func @main(%q: tensor<1x600x2x64xbf16>, %k: tensor<1x600x2x64xbf16>, %v: tensor<1x600x2x64xbf16>) -> tensor<1x600x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x600x2x64xbf16>, tensor<1x600x2x64xbf16>, tensor<1x600x2x64xbf16>) -> tensor<1x600x2x64xbf16>
  return %o : tensor<1x600x2x64xbf16>
}
