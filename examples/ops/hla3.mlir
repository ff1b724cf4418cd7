// hla.hla3 on one head group: q, k, v [B=1, T=200, H=2, d=32], scale = 1.0,
// every other option at its default. See docs/SEMANTICS.md for the formula.
func.func @main(%q: tensor<1x200x2x32xf32>, %k: tensor<1x200x2x32xf32>, %v: tensor<1x200x2x32xf32>) -> tensor<1x200x2x32xf32> {
  %o = hla.hla3 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>, tensor<1x200x2x32xf32>) -> tensor<1x200x2x32xf32>
  return %o : tensor<1x200x2x32xf32>
}
