// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=ptx -o %t/k.ptx 2> %t/remark
// RUN: FileCheck %s --check-prefix=REMARK < %t/remark
// RUN: hla-opt %s "--hla-cuda-pipeline=$(sed -n 's/.*hla.cuda_options = "\(.*\)"$/\1/p' %t/remark)" -o %t/rebuilt.mlir
// RUN: %PYTHON %S/Inputs/same_ptx.py %t/rebuilt.mlir %t/k | FileCheck %s --check-prefix=SAME

// Tests that --emit reports the options its CUDA schedule search settled on
// (also kept on the module as hla.cuda_options), and that the CUDA pipeline
// run with exactly those options rebuilds byte-identical PTX. The graph
// (one sequence-head pair, 16 chunks) takes the segmented schedule, two
// kernel modules.

// REMARK: remark: hla.cuda_options = "{{.*}}schedule=segmented{{.*}}"

// SAME: same main_kernel
// SAME: same main_kernel_0

func.func @main(%q: tensor<1x512x1x16xbf16>) -> tensor<1x512x1x16xbf16> {
  %o = hla.hla2 %q, %q, %q : (tensor<1x512x1x16xbf16>, tensor<1x512x1x16xbf16>, tensor<1x512x1x16xbf16>) -> tensor<1x512x1x16xbf16>
  return %o : tensor<1x512x1x16xbf16>
}
