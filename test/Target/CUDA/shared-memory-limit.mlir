// REQUIRES: cuda-toolkit
// RUN: not hla-opt %s --hla-target=cuda --emit=ptx -o %t.ptx 2>&1 | FileCheck %s

// Tests that a chunk loop whose tiles and state do not fit in a thread
// block's shared memory (hla2 with d = 128: S, C and G alone take 192 KiB)
// is refused with the number of bytes it would need.

// CHECK: error: 'gpu.launch' op hla-gpu-map-chunk-loops: the chunk loop needs {{[0-9]+}} bytes of shared memory for its tiles and state, more than the 232448 a thread block may use (use a smaller chunk size)
func.func @main(%q: tensor<1x128x2x128xbf16>, %k: tensor<1x128x2x128xbf16>, %v: tensor<1x128x2x128xbf16>) -> tensor<1x128x2x128xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x128x2x128xbf16>, tensor<1x128x2x128xbf16>, tensor<1x128x2x128xbf16>) -> tensor<1x128x2x128xbf16>
  return %o : tensor<1x128x2x128xbf16>
}
