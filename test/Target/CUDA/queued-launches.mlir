// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=llvm --vjp --chunk-size=64 -o %t/vjp.ll
// RUN: FileCheck %s < %t/vjp.ll

// Tests that an artefact's call queues its work on the stream and returns:
// hla2's derived backward (bf16, two passes: two kernels, two device
// buffers for the states the first saves) launches both kernels and frees
// both buffers with no host synchronisation in between or after.

// CHECK-LABEL: define internal void @__hla_call_main(
// CHECK: call ptr @mgpuMemAlloc(
// CHECK: call void @mgpuLaunchKernel(
// CHECK: call void @mgpuLaunchKernel(
// CHECK: call void @mgpuMemFree(
// CHECK-NOT: call void @mgpuStreamSynchronize
// CHECK: ret void
// CHECK-NOT: call void @mgpuStreamSynchronize
func.func @main(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
