// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --chunk-size=64 -o %t/k.cubin 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/auto.cubin 2>&1 | FileCheck %s --check-prefix=AUTO

// Tests that a chunk size given for KDA builds: with no generator asked
// for, the automatic one tries no register tiles (a chunk size was given)
// and the shared-memory phases spill at 64 tokens and d = 64. The search's
// rung for spilling kernels, narrower value tiles on register tiles, is
// taken where register tiles place the loops at that width, as KDA's do
// now: 32-column value tiles, which fit. (Before KDA placed, the rung kept
// the spilling phases instead of failing with "cannot keep this loop's
// tiles in registers".)

// With no chunk size, the register-tile trial at 64-token chunks places
// KDA's loop; its kernels spill (every value tile does), and the search
// keeps them over the phases, in the schedule they spilled in.
// AUTO: remark: hla.cuda_options = "{{.*}}chunk-size=64{{.*}}generator=tiles
// AUTO-NOT: : error:

// CHECK: remark: hla.cuda_options = "{{.*}}chunk-size=64{{.*}}generator=tiles{{.*}}value-tile=32
// CHECK: remark: hla.chunking = ["kda: fused, 2 value tiles of 32 columns"]
// CHECK-NOT: error

func.func @main(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %g: tensor<1x100x2x64xbf16>, %beta: tensor<1x100x2xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
