// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTXAS < %t/ptxas.log

// Tests the artefact's last resort for hla2 at d = 128: its register-tile
// kernels spill at every value tile (64, 32 and 16 columns, two
// warpgroups), and the shared-memory phases would keep its 128 x 128 state
// in device memory; the widest spilling tiles are kept then (spills stay
// in L1: 0.80 ms against the phases' 5.58 at 8x16x2048x128 on an H200).

// CHECK: remark: hla.cuda_options = "{{.*}}chunk-size=64{{.*}}generator=tiles{{.*}}schedule=persistent{{.*}}value-tile=64 warpgroups=0"
// PTXAS: Function properties for main_kernel
// PTXAS-NEXT: bytes stack frame, {{[1-9][0-9]*}} bytes spill stores
func.func @main(%q: tensor<1x128x72x128xbf16>) -> tensor<1x128x72x128xbf16> {
  %o = hla.hla2 %q, %q, %q : (tensor<1x128x72x128xbf16>, tensor<1x128x72x128xbf16>, tensor<1x128x72x128xbf16>) -> tensor<1x128x72x128xbf16>
  return %o : tensor<1x128x72x128xbf16>
}
