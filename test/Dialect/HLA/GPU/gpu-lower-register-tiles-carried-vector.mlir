// RUN: hla-opt %s --hla-cuda-pipeline="chip=sm_90a chunk-size=64 generator=tiles hoist-chunk-work=on linsimp-anchor-rows=64 schedule=segmented segments=4" -verify-diagnostics -o /dev/null

// Tests that register tiles refuse, with a diagnostic, a loop carrying a
// column vector whose initial value is a row vector (LinSimp's segmented
// state: the runs' combine carries the keys' feature sums a, which the
// loop before it made as a row vector). The emitter would have to convert
// the vector through shared memory on entry; it evaluated it as a tile
// computed on demand instead and crashed (segmentation fault, c2e08ea).

func.func @segmented_state(%q: tensor<1x512x2x64xbf16>, %k: tensor<1x512x2x64xbf16>, %v: tensor<1x512x2x64xbf16>, %r: tensor<1x512x2x64xbf16>, %u: tensor<1x512x2x64xbf16>, %om: tensor<64x64xbf16>) -> tensor<1x512x2x64xbf16> {
  // expected-error @below {{hla-gpu-lower-register-tiles: cannot keep this loop's tiles in registers: scf.for: a carried column vector whose initial value is a row vector}}
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x512x2x64xbf16>, tensor<1x512x2x64xbf16>, tensor<1x512x2x64xbf16>, tensor<1x512x2x64xbf16>, tensor<1x512x2x64xbf16>, tensor<64x64xbf16>) -> tensor<1x512x2x64xbf16>
  return %o : tensor<1x512x2x64xbf16>
}
