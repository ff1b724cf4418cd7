// RUN: hla-opt %s --hla-expand --hla-verify-lowered --verify-diagnostics

// Tests that an hla op left after the hla-level lowering is reported (here
// the algebra ops of an expanded op that was never chunked).
func.func @left(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  // expected-error @+3 {{'hla.segment' was not lowered by the hla code-generation pipeline}}
  // expected-error @+2 {{'hla.scan' was not lowered by the hla code-generation pipeline}}
  // expected-error @+1 {{'hla.readout' was not lowered by the hla code-generation pipeline}}
  %o = hla.hla2 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}
