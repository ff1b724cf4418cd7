// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-cuda-kernels -o %t/kernels.mlir
// RUN: FileCheck %s < %t/kernels.mlir
// RUN: sed -n 's/.*hla.cuda_options = "\([^"]*\)".*/\1/p' %t/kernels.mlir > %t/pass
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/k.cubin 2>&1 | sed -n 's/.*hla.cuda_options = "\(.*\)"$/\1/p' > %t/emit
// RUN: diff %t/pass %t/emit
// RUN: hla-opt %s "--hla-cuda-kernels=schedule=persistent" | FileCheck %s --check-prefix=PINNED

// Tests the hla-cuda-kernels pass on its own: the kernels built with the
// options left to it decided (eight sequence-head pairs leave the SMs idle:
// the segmented schedule, two kernel modules), assembled by ptxas (cubins,
// not PTX), and the decision recorded on the module, the same as --emit's;
// an option given is kept.

// CHECK: hla.cuda_options = "{{.*}}chunk-size=32{{.*}}schedule=segmented{{.*}}"
// CHECK: gpu.binary @main_kernel {{.*}}bin = "\7FELF
// CHECK: gpu.binary @main_kernel_0 {{.*}}bin = "\7FELF

// PINNED: hla.cuda_options = "{{.*}}schedule=persistent{{.*}}"

func.func @main(%q: tensor<2x256x4x32xbf16>) -> tensor<2x256x4x32xbf16> {
  %o = hla.linear_attention %q, %q, %q : (tensor<2x256x4x32xbf16>, tensor<2x256x4x32xbf16>, tensor<2x256x4x32xbf16>) -> tensor<2x256x4x32xbf16>
  return %o : tensor<2x256x4x32xbf16>
}
