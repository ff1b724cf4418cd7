// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients=false value-tile=0" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" --mlir-print-op-on-diagnostic=false --verify-diagnostics -o /dev/null

// Tests the register pressure of hla2's derived backward (bf16, d = dv =
// 64, 64-token chunks, two warpgroups), whose reverse pass runs 38
// contractions per chunk and sums up to eight terms per gradient tile:
// with the sums added a term at a time (hla-split-tile-sums) and the body
// ordered by the schedule with the lower peak (ties between ops adding as
// many registers going to the op that makes more of its readers ready), at
// most 320 fragment registers per thread are alive. (With 43 contractions,
// four of them products computed again transposed and Q·S₀ᵀ beside Q·S₀,
// the peak was 304, but ptxas spilled 816 bytes per thread at 8x16x2048.)
func.func @main(%q: tensor<8x256x16x64xbf16>, %k: tensor<8x256x16x64xbf16>, %v: tensor<8x256x16x64xbf16>) -> tensor<8x256x16x64xbf16> {
  // expected-remark @below {{register tiles: 6 contractions on wgmma, 19 fragments, 17 on-demand tiles, 4 shared-memory operand copies (4 conversions from fragments; 3 operands read from landing buffers), 83200 bytes of shared memory, 2 warpgroup(s), 96 fragment registers per thread at most}}
  // expected-remark-re @below {{register tiles: 38 contractions on wgmma, {{.*}}, 2 warpgroup(s), 320 fragment registers per thread at most}}
  %o = hla.hla2 %q, %k, %v : (tensor<8x256x16x64xbf16>, tensor<8x256x16x64xbf16>, tensor<8x256x16x64xbf16>) -> tensor<8x256x16x64xbf16>
  return %o : tensor<8x256x16x64xbf16>
}
