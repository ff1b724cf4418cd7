// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that an automatic choice whose every form spills is built anyway:
// hla3's derived backward at d = 64 spills on the shared-memory phases
// (the register tiles do not take hla3's backward), and with nothing
// narrower to try the artefact keeps the spilling kernel rather than fail.
// Its first kernel (the states entering the chunks) assembles without
// spills, its second (the reverse pass) spills: the last resort assembles
// both again, from their PTX. (A generator the caller fixed still fails on
// spills: spill-error.mlir.) Slow (about three minutes of ptxas on two
// cores): three assemblies of a spilling kernel.
// CHECK: remark: hla.cuda_options = "{{.*}}generator=phases{{.*}}"
// LOG: // kernel module main_kernel
// LOG: , 0 bytes spill stores
// LOG: // kernel module main_kernel_0
// LOG: , {{[1-9][0-9]*}} bytes spill stores
func.func @main(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.hla3 %q, %k, %v : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
