// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --chunk-size=64 -o %t/k.cubin 2>&1 | FileCheck %s

// Tests that the CUDA search does not try value tiles for LinSimp: at
// m = 256, chunk 64, the phases' kernel spills, and the search's next rung
// for a spilling kernel is narrower value tiles, which hla-chunk refuses for
// LinSimp's anchor window ("not cut by value"). The search keeps the
// phases, spilling, and records no value tile.

// CHECK: remark: hla.cuda_options = "{{.*}}chunk-size=64{{.*}}generator=phases{{.*}}value-tile=-1{{.*}}"
// CHECK-NOT: error

func.func @main(%q: tensor<1x150x2x64xbf16>, %k: tensor<1x150x2x64xbf16>, %v: tensor<1x150x2x64xbf16>, %r: tensor<1x150x2x64xbf16>, %u: tensor<1x150x2x64xbf16>, %om: tensor<256x64xbf16>) -> tensor<1x150x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 64 : i64} : (tensor<1x150x2x64xbf16>, tensor<1x150x2x64xbf16>, tensor<1x150x2x64xbf16>, tensor<1x150x2x64xbf16>, tensor<1x150x2x64xbf16>, tensor<256x64xbf16>) -> tensor<1x150x2x64xbf16>
  return %o : tensor<1x150x2x64xbf16>
}
