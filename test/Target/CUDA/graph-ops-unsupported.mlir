// REQUIRES: cuda-toolkit
// RUN: not hla-opt %s --hla-target=cuda --emit=ptx -o %t.ptx 2>&1 | FileCheck %s

// Tests that a model graph with ops other than hla attention ops (here a
// residual add) is refused by the CUDA target with a diagnostic, instead
// of running that op on the host over device memory.

// CHECK: error: 'linalg.generic' op hla-gpu-map-chunk-loops: only the chunk loops of hla attention ops run on the GPU so far; this op of the model graph would run on the host over device memory
func.func @main(%q: tensor<1x64x2x16xbf16>, %k: tensor<1x64x2x16xbf16>, %v: tensor<1x64x2x16xbf16>) -> tensor<1x64x2x16xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>, tensor<1x64x2x16xbf16>) -> tensor<1x64x2x16xbf16>
  %r = arith.addf %o, %v : tensor<1x64x2x16xbf16>
  return %r : tensor<1x64x2x16xbf16>
}
