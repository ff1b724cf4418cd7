// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp --hoist-chunk-work=off -o %t/k.cubin --ptxas-log=%t/ptxas.log --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=LOG < %t/ptxas.log

// Tests that KDA's derived backward (the chunk's WY/UT form differentiated
// in reverse, its triangular solve by its closed form) compiles for the
// GPU: its two passes over the chunks, a kernel each, on the phase mapping.
// The register tiles place the reverse pass (its tiles in blocks
// flattened) on one warpgroup, which ptxas spills; it cannot take two
// (it reduces rows and columns), so the search keeps the phases where the
// backward's form is fixed (here --hoist-chunk-work=off; left to auto, the
// gradients' pass is cut into stages: kda-vjp-fission-search.mlir). The pass
// saving the states does not spill; the reverse pass, with its pair
// blocks' bands as 4-D loops, spills a little on the phases (136 bytes at
// d = 64, 212 before the solve's closed form; 2026-12-06).
// CHECK: remark: hla.cuda_options = "{{.*}}generator=phases{{.*}}"
// CHECK: remark: hla.chunking = ["kda backward: two passes, the chunk's WY/UT form differentiated in reverse"]
// LOG: 0 bytes spill stores, 0 bytes spill loads
// LOG: Compiling entry function
func.func @main(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %g: tensor<1x100x2x64xbf16>, %beta: tensor<1x100x2xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.125 : f64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
