// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --chunk-size=64 -o %t/k.cubin 2>&1 | FileCheck %s

// Tests that a chunk size given for KDA builds: register tiles do not take
// its chunk loop, so the automatic generator leaves it to the shared-memory
// phases, whose kernel spills at 64 tokens and d = 64. The search's rung for
// spilling kernels, narrower value tiles on register tiles, is taken only
// where register tiles place the loops at that width (before, it forced
// them and failed with "cannot keep this loop's tiles in registers"); the
// phases are kept, spilling.

// CHECK: remark: hla.cuda_options = "{{.*}}chunk-size=64{{.*}}generator=phases{{.*}}"
// CHECK-NOT: error

func.func @main(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %g: tensor<1x100x2x64xbf16>, %beta: tensor<1x100x2xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
