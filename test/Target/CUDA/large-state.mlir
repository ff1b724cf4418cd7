// REQUIRES: cuda-toolkit
// RUN: hla-opt %s --hla-target=cuda --cuda-generator=phases --emit=llvm -o %t.ll
// RUN: FileCheck %s < %t.ll

// Tests that a chunk loop whose tiles and state do not fit in a thread
// block's shared memory (hla2 with d = 128: S, C and G alone take 192 KiB,
// with their combine temporaries and the chunk tiles 512 KiB) still
// compiles on the shared-memory phases: the largest buffers live in a
// device-memory scratch buffer, allocated and freed on the launch's stream
// around the kernel. (By default such a graph gets register tiles that
// spill: tiles-spills-over-scratch.mlir.)

// CHECK: call {{.*}}@mgpuMemAlloc
// CHECK: call {{.*}}@mgpuLaunchKernel
// CHECK: call {{.*}}@mgpuMemFree
func.func @main(%q: tensor<1x128x2x128xbf16>, %k: tensor<1x128x2x128xbf16>, %v: tensor<1x128x2x128xbf16>) -> tensor<1x128x2x128xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x128x2x128xbf16>, tensor<1x128x2x128xbf16>, tensor<1x128x2x128xbf16>) -> tensor<1x128x2x128xbf16>
  return %o : tensor<1x128x2x128xbf16>
}
