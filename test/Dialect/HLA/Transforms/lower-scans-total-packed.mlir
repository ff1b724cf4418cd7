// RUN: hla-opt %s --hla-lower-scans --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// Tests that a packed total of segments that are not a chunked chain is
// refused, with the reason.
func.func @packed_total(%p: tensor<1x8x2x4x4xf32>, %rho: tensor<1x8x2xf32>, %cu: tensor<4xi32>) -> tensor<3x2x4x4xf32> {
  // expected-error @+1 {{hla-lower-scans: a total over packed sequences (cu_seqlens) is lowered only as hla-chunk's segment -> total chain}}
  %P, %r = hla.total #la(%p, %rho) cu_seqlens(%cu) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2xf32>, tensor<4xi32>) -> (tensor<3x2x4x4xf32>, tensor<3x2xf32>)
  return %P : tensor<3x2x4x4xf32>
}
