// RUN: hla-opt %s --split-input-file --hla-lower-linsimp-exact --verify-diagnostics

// Tests that a dynamic sequence length is refused with the reason.
func.func @dynamic(%q: tensor<1x?x2x4xf32>, %omega: tensor<16x4xf32>) -> tensor<1x?x2x4xf32> {
  // expected-error @+1 {{hla-lower-linsimp-exact: the chunked lowering needs static [B, T, H, ...] shapes}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega {kernel = #hla.kernel<exact>} : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<16x4xf32>) -> tensor<1x?x2x4xf32>
  return %o : tensor<1x?x2x4xf32>
}

// -----

// Tests that packed sequences are refused with the reason.
func.func @packed(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>, %cu: tensor<3xi32>) -> tensor<1x8x2x4xf32> {
  // expected-error @+1 {{hla-lower-linsimp-exact: LinSimp's exact kernel takes no packed sequences or state}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega cu_seqlens(%cu) {kernel = #hla.kernel<exact>} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>, tensor<3xi32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}
