// A packed batch of two sequences (cu_seqlens), for runtime-check.test.
func.func @main(%q: tensor<1x24x2x8xf32>, %k: tensor<1x24x2x8xf32>, %v: tensor<1x24x2x8xf32>, %cu: tensor<3xi32>) -> tensor<1x24x2x8xf32> {
  %o = hla.linear_attention %q, %k, %v cu_seqlens(%cu) : (tensor<1x24x2x8xf32>, tensor<1x24x2x8xf32>, tensor<1x24x2x8xf32>, tensor<3xi32>) -> tensor<1x24x2x8xf32>
  return %o : tensor<1x24x2x8xf32>
}
