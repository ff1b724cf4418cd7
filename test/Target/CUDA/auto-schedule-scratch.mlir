// REQUIRES: cuda-toolkit
// RUN: hla-opt %s --hla-target=cuda --emit=llvm -o %t.auto.ll
// RUN: FileCheck %s --check-prefix=AUTO < %t.auto.ll
// RUN: hla-opt %s --hla-target=cuda --emit=llvm --cuda-schedule=segmented -o %t.seg.ll
// RUN: FileCheck %s --check-prefix=SEG < %t.seg.ll

// Tests the auto schedule's choice when the state does not fit in shared
// memory (hla2, d = 128, one sequence of 16 chunks, 2 heads): the wave
// model alone would split the sequence, but kernels that stream their state
// through device-memory scratch take the persistent schedule (one kernel);
// asked for explicitly, the segmented schedule (two kernels) is still made.

// AUTO: call {{.*}}@mgpuLaunchKernel
// AUTO-NOT: call {{.*}}@mgpuLaunchKernel
// SEG: call {{.*}}@mgpuLaunchKernel
// SEG: call {{.*}}@mgpuLaunchKernel
func.func @main(%q: tensor<1x1024x2x128xbf16>, %k: tensor<1x1024x2x128xbf16>, %v: tensor<1x1024x2x128xbf16>) -> tensor<1x1024x2x128xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x1024x2x128xbf16>, tensor<1x1024x2x128xbf16>, tensor<1x1024x2x128xbf16>) -> tensor<1x1024x2x128xbf16>
  return %o : tensor<1x1024x2x128xbf16>
}
