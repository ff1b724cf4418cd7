// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=ptx -o %t/k.ptx --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: cat %t/*.ptx | FileCheck %s --check-prefix=PTX

// Tests that packed sequences in bf16 at d = 64 (wgmma) compile for the GPU:
// the offsets are checked once, by a reduction kernel whose code the host
// asserts on, so no kernel holds an assertion (ptxas serializes wgmma
// across the call of __assertfail, which the artefact refuses).
// CHECK: remark: hla.cuda_options
// CHECK-NOT: error
// PTX-NOT: __assertfail
// PTX: wgmma.mma_async
// PTX-NOT: __assertfail
func.func @main(%q: tensor<1x200x2x64xbf16>, %k: tensor<1x200x2x64xbf16>, %v: tensor<1x200x2x64xbf16>, %cu: tensor<4xi64>) -> (tensor<1x200x2x64xbf16>, tensor<3x2x64x64xf32>) {
  %o:2 = hla.linear_attention %q, %k, %v cu_seqlens(%cu) : (tensor<1x200x2x64xbf16>, tensor<1x200x2x64xbf16>, tensor<1x200x2x64xbf16>, tensor<4xi64>) -> (tensor<1x200x2x64xbf16>, tensor<3x2x64x64xf32>)
  return %o#0, %o#1 : tensor<1x200x2x64xbf16>, tensor<3x2x64x64xf32>
}
