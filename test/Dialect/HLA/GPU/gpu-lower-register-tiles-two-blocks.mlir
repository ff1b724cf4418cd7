// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=true anchor-rows=64 stable-features=true" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report" -o /dev/null 2>&1 | FileCheck %s

// Tests that a block's copies share bytes only where they must (more
// than a block's 227 KiB) or where that lets two blocks of one warpgroup
// run on an SM (half of 227 KiB plus the 1 KiB each block reserves: at
// most 115,712 bytes). LinSimp's rows with causal isolation (W = 16, d =
// dv = 64), the window's products reading their A from registers (no
// copies of x, F or P): at m = 64 its copies, each in bytes of its own,
// need 105,216 bytes, two blocks an SM without sharing: they do not share.
// At m = 256 a thread holds 192 fragment registers (one block an SM) and
// the copies in bytes of their own would need 253,440, more than a block
// has: they share, 220,160. (Sharing to fit two blocks an SM:
// gpu-lower-register-tiles-two-blocks-shared.mlir.)
// CHECK: remark: register tiles: {{.*}} 50944 bytes of shared memory
// CHECK: remark: register tiles: 10 contractions on wgmma, {{.*}} 105216 bytes of shared memory, 1 warpgroup(s), 96 fragment registers per thread at most
// CHECK: remark: register tiles: {{.*}} 103552 bytes of shared memory
// CHECK: remark: register tiles: 10 contractions on wgmma, {{.*}} 220160 bytes of shared memory, 1 warpgroup(s), 192 fragment registers per thread at most
func.func @features64(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %r: tensor<1x100x2x64xbf16>, %u: tensor<1x100x2x64xbf16>, %om: tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
func.func @features256(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %r: tensor<1x100x2x64xbf16>, %u: tensor<1x100x2x64xbf16>, %om: tensor<256x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<256x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
