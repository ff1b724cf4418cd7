// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that an automatic choice whose every form spills is built anyway:
// hla3's derived backward at d = 64 does not fit the register tiles' shared
// memory with its gradients in the reverse pass, so it takes a pass of its
// own for them (parallel gradients), whose reverse pass and gradient pass
// spill on the tiles (the gradient pass on two warpgroups: its body peaks
// above 128 fragment registers per thread) as they do on the shared-memory
// phases. With nothing narrower to try, the search keeps the first
// spilling tiles (spills in registers' stead beat the phases' for a
// derived backward) rather than fail. (A generator the caller fixed still
// fails on spills: spill-error.mlir.)
// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles{{.*}}parallel-gradients=on{{.*}}"
// CHECK: remark: hla.chunking = ["hla3 backward: parallel gradients"]
// LOG: // kernel module main_kernel
// LOG: , 0 bytes spill stores
// LOG: // kernel module main_kernel_0
// LOG: , {{[1-9][0-9]*}} bytes spill stores
// LOG: // kernel module main_kernel_1
// LOG: , {{[1-9][0-9]*}} bytes spill stores
func.func @main(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.hla3 %q, %k, %v : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
