// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=ptx -o %t/k.ptx 2>&1 | FileCheck %s
// RUN: cat %t/k.*.ptx | FileCheck %s --check-prefix=PTX

// Tests the CUDA search's choice for LinSimp (bf16, d = dv = m = 64,
// W = 16): its rows (the anchor window) on register tiles in a pass
// parallel over chunks after a persistent loop keeping M and a
// (hoist-chunk-work on, 64-token chunks, one anchor offset per pass of 64
// rows); the kernels: the loop on the phases (256 threads), the rows on
// register tiles (128 threads, wgmma).

// CHECK-LABEL: remark: hla.cuda_options
// CHECK-SAME: chunk-size=64
// CHECK-SAME: hoist-chunk-work=on
// CHECK-SAME: linsimp-anchor-rows=64
// CHECK-SAME: schedule=persistent
// PTX-DAG: .maxntid 128, 1, 1
// PTX-DAG: .maxntid 256, 1, 1
// PTX-DAG: wgmma.mma_async

func.func @main(%q: tensor<1x200x2x64xbf16>, %k: tensor<1x200x2x64xbf16>, %v: tensor<1x200x2x64xbf16>, %r: tensor<1x200x2x64xbf16>, %u: tensor<1x200x2x64xbf16>, %om: tensor<64x64xbf16>) -> tensor<1x200x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x200x2x64xbf16>, tensor<1x200x2x64xbf16>, tensor<1x200x2x64xbf16>, tensor<1x200x2x64xbf16>, tensor<1x200x2x64xbf16>, tensor<64x64xbf16>) -> tensor<1x200x2x64xbf16>
  return %o : tensor<1x200x2x64xbf16>
}
