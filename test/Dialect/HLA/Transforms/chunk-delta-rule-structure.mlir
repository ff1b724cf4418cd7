// RUN: hla-opt %s --hla-chunk="chunk-size=4 form=fused" | FileCheck %s

// Tests that hla-chunk recognises the gated delta rule by its rules, not by
// the monoid's name: a monoid spelled like the library's `kda` under another
// name and with another scale is chunked in the WY/UT form (the triangular
// solve's inverse built by doubling its diagonal blocks: the masks of its two
// levels at chunk 4). (A rule changed makes it an ordinary matrix-valued
// transition, refused: chunk-invalid.mlir.)

#renamed = #hla.monoid<"my_gated_delta"
  inputs(q: [dk], k: [dk], v: [dv], g: [dk], beta: [])
  params(scale = 0.5)
  state(M: [dk, dk] eye, S: [dk, dv])
  token(M = diag(exp(g)) - beta * k * k.T * diag(exp(g)), S = beta * k * v.T)
  combine(M = M.b * M.a, S = M.b * S.a + S.b)
  readout(num = scale * q.T * S)>

// CHECK-LABEL: func.func @renamed
// CHECK: scf.forall
// CHECK:   scf.for
// CHECK:     arith.divui %{{.+}}, %c2{{.*}} : index
// CHECK:     arith.divui %{{.+}}, %c4{{.*}} : index
// CHECK-NOT: hla.scan
// CHECK-NOT: hla.readout
func.func @renamed(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<1x8x2x4xf32>, %beta: tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32> {
  %m, %s = hla.segment #renamed(%k, %v, %g, %beta) : (tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x6xf32>)
  %p = hla.scan #renamed(%m, %s) : (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x6xf32>) -> tensor<1x8x2x4x6xf32>
  %o = hla.readout #renamed(%q) state(%p) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x6xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
