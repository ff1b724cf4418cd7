// RUN: hla-opt %s --hla-chunk="chunk-size=4 form=fused value-tile=2" -split-input-file -verify-diagnostics

// Tests the value tiles hla-chunk refuses: a tile that does not divide the
// value width, and a monoid whose rules mix value columns (n = vᵀv reads
// every column of v into a scalar, so no tile can compute its share alone).

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

func.func @width(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x5xf32>) -> tensor<1x8x2x5xf32> {
  %s = hla.segment #la(%q, %v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x5xf32>) -> tensor<1x8x2x4x5xf32>
  %p = hla.scan #la(%s) : (tensor<1x8x2x4x5xf32>) -> tensor<1x8x2x4x5xf32>
  // expected-error @+1 {{hla-chunk: value-tile 2 must divide the value width 5}}
  %o = hla.readout #la(%q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x5xf32>) -> tensor<1x8x2x5xf32>
  return %o : tensor<1x8x2x5xf32>
}

// -----

#mixing = #hla.monoid<"mixing" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], n: [])
  token(P = k * v.T, n = v.T * v) combine(P = P.a + P.b, n = n.a + n.b)
  readout(num = n * q.T * P)>

func.func @mixing(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) -> tensor<1x8x2x6xf32> {
  %s, %n = hla.segment #mixing(%q, %v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> (tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>)
  %p, %m = hla.scan #mixing(%s, %n) : (tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>)
  // expected-error @+1 {{hla-chunk: value-tile: a rule of monoid 'mixing' mixes value columns, so they cannot be computed apart}}
  %o = hla.readout #mixing(%q) state(%p, %m) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x6xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
