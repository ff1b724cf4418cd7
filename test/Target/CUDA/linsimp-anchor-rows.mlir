// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=ptx --hoist-chunk-work=off -o %t/k.ptx 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-target=cuda --emit=ptx --hoist-chunk-work=off --linsimp-anchor-rows=64 -o %t/k64.ptx 2>&1 | FileCheck %s --check-prefix=PINNED

// Tests the CUDA search's choices for LinSimp on the phases (m = 256,
// W = 64, bf16; its rows not moved to register tiles, which
// linsimp-tiles-search.mlir tests): the phases' chunk of 16 tokens, and stacked anchor passes of 64 rows halved
// while the kernels need device-memory scratch (at m = 256 a [64, 256] f32
// tile is 64 KB): 16 rows, one offset per pass, fits. Rows given are kept.

// CHECK: remark: hla.cuda_options = "{{.*}}chunk-size=16{{.*}}linsimp-anchor-rows=16{{.*}}"
// PINNED: remark: hla.cuda_options = "{{.*}}chunk-size=16{{.*}}linsimp-anchor-rows=64{{.*}}"

func.func @main(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>, %r: tensor<1x256x2x64xbf16>, %u: tensor<1x256x2x64xbf16>, %om: tensor<256x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 64 : i64} : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<256x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
