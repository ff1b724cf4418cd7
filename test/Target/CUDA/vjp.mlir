// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/k.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// Tests that the derived backward (hla-derive-vjp, then hla.prefix_vjp's
// chunk loops) compiles for the GPU: its two passes over the chunks, a
// kernel each, one block per (sequence, head), on the phase mapping here
// (hla2 at d = 16; linear attention's backward at d = 64 takes register
// tiles: vjp-tiles.mlir). The backward has one form, whatever the recorded
// schedule.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=phases{{.*}}"
// FILES: k.cubin
func.func @main(%q: tensor<1x96x2x16xbf16>, %k: tensor<1x96x2x16xbf16>, %v: tensor<1x96x2x16xbf16>) -> tensor<1x96x2x16xbf16> {
  %o = hla.hla2 %q, %k, %v {decay = 0.9 : f64} : (tensor<1x96x2x16xbf16>, tensor<1x96x2x16xbf16>, tensor<1x96x2x16xbf16>) -> tensor<1x96x2x16xbf16>
  return %o : tensor<1x96x2x16xbf16>
}
