// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/f.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/b.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-expand --hla-chunk=form=fused --hla-gpu-distribute-graph-ops | FileCheck %s --check-prefix=MAPPED

// Tests that one sequence of one head compiles for the GPU, forward and
// backward: its chunk loop has a single iteration, which canonicalization
// used to inline into the host code (where reading device memory is
// refused); hla-gpu-distribute-graph-ops maps hla-chunk's loops to thread
// blocks, which keeps them loops.
// CHECK: remark: hla.cuda_options
// CHECK-NOT: error
// MAPPED-LABEL: func.func @main
// MAPPED: scf.forall {{.*}} in (1, 1)
// MAPPED: mapping = [#gpu.block<x>, #gpu.block<y>]
func.func @main(%q: tensor<1x64x1x16xbf16>, %k: tensor<1x64x1x16xbf16>, %v: tensor<1x64x1x16xbf16>) -> tensor<1x64x1x16xbf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x64x1x16xbf16>, tensor<1x64x1x16xbf16>, tensor<1x64x1x16xbf16>) -> tensor<1x64x1x16xbf16>
  return %o : tensor<1x64x1x16xbf16>
}
