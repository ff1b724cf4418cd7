// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=4 form=phased value-tile=2" -verify-diagnostics

// Tests that value tiles are refused outside the fused form (the phased
// form's readouts keep whole rows).

func.func @phased(%q: tensor<1x10x2x4xf32>, %k: tensor<1x10x2x4xf32>, %v: tensor<1x10x2x6xf32>) -> tensor<1x10x2x6xf32> {
  // expected-error @+1 {{hla-chunk: value-tile 2 needs the fused form; the phased form keeps whole rows}}
  %o = hla.linear_attention %q, %k, %v {scale = 1.0 : f64} : (tensor<1x10x2x4xf32>, tensor<1x10x2x4xf32>, tensor<1x10x2x6xf32>) -> tensor<1x10x2x6xf32>
  return %o : tensor<1x10x2x6xf32>
}
