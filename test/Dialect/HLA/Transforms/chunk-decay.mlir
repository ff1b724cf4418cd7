// RUN: hla-opt %s --hla-expand --hla-chunk=chunk-size=8 | FileCheck %s

// Tests that decayed monoids get their decay as tiles built once, before the
// chunk loops — M[p][v] = γ^(p − v) for v ≤ p, 0 above the diagonal — and
// that the decay component's chunk summary is γ^length with length the
// chunk's own token count, min(T − start, c) (3 chunks of 8, 8 and 4 tokens
// for T = 20): exp(length · ln γ), ln 0.9 = −0.1053605.

// CHECK-LABEL: func.func @decayed
// The decayed triangular masks come first, outside both chunk loops.
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<8x8xf32>)
// CHECK:   %[[P:.+]] = linalg.index 0
// CHECK:   %[[V:.+]] = linalg.index 1
// CHECK:   %[[DIFF:.+]] = arith.subi %[[P]], %[[V]]
// CHECK:   %[[INSIDE:.+]] = arith.cmpi sge, %[[DIFF]], %{{.+}}
// CHECK:   %[[DI:.+]] = arith.index_cast %[[DIFF]] : index to i64
// CHECK:   %[[DF:.+]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK:   %[[LN:.+]] = arith.constant -0.10536051{{[0-9]*}} : f32
// CHECK:   %[[EXPONENT:.+]] = arith.mulf %[[DF]], %[[LN]]
// CHECK:   %[[W:.+]] = math.exp %[[EXPONENT]]
// CHECK:   %[[ZERO:.+]] = arith.constant 0.0{{0*}}e+00 : f32
// CHECK:   arith.select %[[INSIDE]], %[[W]], %[[ZERO]]
// CHECK: scf.forall (%{{.+}}, %[[N:.+]], %{{.+}}) in (1, 3, 1) {{.*}} -> (tensor<1x3x1x4x4xf32>, tensor<1x3x1x4x4xf32>, tensor<1x3x1x4x4xf32>, tensor<1x3x1xf32>)
// The chunk's length: min(20 − 8n, 8).
// CHECK:   %[[C8:.+]] = arith.constant 8 : index
// CHECK:   %[[START:.+]] = arith.muli %[[N]], %[[C8]]
// CHECK:   %[[C20:.+]] = arith.constant 20 : index
// CHECK:   %[[REST:.+]] = arith.subi %[[C20]], %[[START]]
// CHECK:   %[[LEN:.+]] = arith.minsi %[[REST]], %[[C8]]
// The summary of ρ: exp(length · ln γ), a scalar per chunk.
// CHECK:   %[[LI:.+]] = arith.index_cast %[[LEN]] : index to i64
// CHECK:   %[[LF:.+]] = arith.sitofp %[[LI]] : i64 to f32
// CHECK:   %[[LN2:.+]] = arith.constant -0.10536051{{[0-9]*}} : f32
// CHECK:   %[[RATE:.+]] = arith.mulf %[[LF]], %[[LN2]]
// CHECK:   %[[RHO:.+]] = math.exp %[[RATE]]
// CHECK:   %[[SUMMARY:.+]] = tensor.from_elements %[[RHO]] : tensor<f32>
// CHECK:   tensor.parallel_insert_slice %[[SUMMARY]] into %{{.+}} : tensor<f32> into tensor<1x3x1xf32>
// CHECK: hla.scan exclusive
// CHECK: scf.forall
func.func @decayed(%q: tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32> {
  %o = hla.hla2 %q, %q, %q {decay = 0.9 : f64} : (tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32>
  return %o : tensor<1x20x1x4xf32>
}
