// REQUIRES: cuda-toolkit
// RUN: not hla-opt %s --hla-target=cuda --emit=cubin --vjp --parallel-gradients=on -o %t.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// Tests that a launch whose blocks' device-memory scratch would pass 2^31
// bytes is refused: each block's slice starts at blockIdx.x · scratch in
// the kernels' 32-bit indices, so the slices would wrap onto each other
// (KDA's backward with parallel gradients, 32768 blocks of 152 KB at
// d = 64, gave gradients 40x off before this check; at d = 64 its tiles now
// fit in shared memory, at d = 128 they take 288 KB of scratch a block).
// CHECK: error: 'gpu.launch' op hla-gpu-map-chunk-loops: 32768 blocks of {{[0-9]+}} bytes of device-memory scratch exceed the 2^31 bytes the kernels' 32-bit indices address
func.func @main(%q: tensor<8x8192x16x128xbf16>, %k: tensor<8x8192x16x128xbf16>, %v: tensor<8x8192x16x128xbf16>, %g: tensor<8x8192x16x128xbf16>, %beta: tensor<8x8192x16xbf16>) -> tensor<8x8192x16x128xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.088388347648318 : f64} : (tensor<8x8192x16x128xbf16>, tensor<8x8192x16x128xbf16>, tensor<8x8192x16x128xbf16>, tensor<8x8192x16x128xbf16>, tensor<8x8192x16xbf16>) -> tensor<8x8192x16x128xbf16>
  return %o : tensor<8x8192x16x128xbf16>
}
