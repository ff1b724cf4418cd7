// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --cuda-schedule=segmented --segments=2 --emit=ptx -o %t/k.ptx
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --check-prefix=PTX < %t/k.main_kernel.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/k.main_kernel_0.ptx
// RUN: hla-opt %s --hla-target=cuda --cuda-schedule=segmented --segments=2 --emit=cubin -o %t/k.cubin
// RUN: llvm-readelf -h %t/k.main_kernel.cubin | FileCheck %s --check-prefix=CUBIN
// RUN: llvm-readelf -h %t/k.main_kernel_0.cubin | FileCheck %s --check-prefix=CUBIN

// Tests --emit=ptx and --emit=cubin on a graph with several kernel modules
// (the segmented schedule's two passes): one file per module, the module's
// name before the extension of -o; nothing is written under -o itself.

// FILES-NOT: {{^}}k.ptx{{$}}
// FILES: k.main_kernel.ptx
// FILES: k.main_kernel_0.ptx

// PTX: .target sm_90a
// PTX: .visible .entry main_kernel

// CUBIN: Machine: NVIDIA CUDA

func.func @main(%q: tensor<1x200x2x32xf32>) -> tensor<1x200x2x32xf32> {
  %o = hla.hla2 %q, %q, %q : (tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>) -> tensor<1x200x2x32xf32>
  return %o : tensor<1x200x2x32xf32>
}
