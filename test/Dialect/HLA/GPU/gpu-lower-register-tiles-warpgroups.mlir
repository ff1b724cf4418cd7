// RUN: hla-opt %s --split-input-file --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: hla-opt %s --split-input-file --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles warpgroups=2 report" 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: hla-opt %s --split-input-file --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=8" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles warpgroups=2" --verify-diagnostics
// RUN: not hla-opt %s "--hla-gpu-lower-register-tiles=warpgroups=3" 2>&1 | FileCheck %s --check-prefix=OPTION

// Tests how many warpgroups share a block's fragments. Linear attention
// (one carried 64 x 64 state, at most 96 fragment registers alive) runs on
// one by default: 128 threads, wgmma m64n64k16. warpgroups=2 splits every
// fragment's columns: 256 threads, m64n32k16 per warpgroup, half the
// registers. Value tiles of 8 columns cannot be split (wgmma's N is at
// least 8); a count other than 0, 1, 2 is refused.

// AUTO: remark: register tiles: 4 contractions on wgmma, {{.*}}, 1 warpgroup(s), 96 fragment registers per thread at most
// AUTO: threads({{.*}}) in ({{[^ ]+}} = %c128
// AUTO: <m = 64, n = 64, k = 16>

// TWO: remark: register tiles: 4 contractions on wgmma, {{.*}}, 2 warpgroup(s), 48 fragment registers per thread at most
// TWO: threads({{.*}}) in ({{[^ ]+}} = %c256
// TWO-NOT: n = 64
// TWO: <m = 64, n = 32, k = 16>
// TWO-NOT: n = 64

// OPTION: hla-gpu-lower-register-tiles: warpgroups must be 0 (auto), 1 or 2, got 3

func.func @linear(%q: tensor<1x128x2x64xbf16>, %k: tensor<1x128x2x64xbf16>, %v: tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16> {
  // expected-error @below {{hla-gpu-lower-register-tiles: a fragment of 8 columns cannot be shared by 2 warpgroups (8 columns each at least)}}
  %o = hla.linear_attention %q, %k, %v : (tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16>
  return %o : tensor<1x128x2x64xbf16>
}
