// RUN: hla-opt %s --hla-expand --hla-chunk=chunk-size=8 | FileCheck %s

// Tests that decayed monoids get their decay as tiles built once, before the
// chunk loops (γ^(w(p−v)) masks over the chunk's positions), and that the
// decay component's chunk summary is γ^length.

// CHECK-LABEL: func.func @decayed
// The decayed triangular masks come first, outside both chunk loops.
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<8x8xf32>)
// CHECK:   linalg.index 0
// CHECK:   linalg.index 1
// CHECK:   arith.cmpi sge
// CHECK:   math.exp
// CHECK: scf.forall {{.*}} -> (tensor<1x3x1x4x4xf32>, tensor<1x3x1x4x4xf32>, tensor<1x3x1x4x4xf32>, tensor<1x3x1xf32>)
// The summary of ρ: γ^length = exp(length · ln γ), a scalar per chunk.
// CHECK:   math.exp
// CHECK:   tensor.from_elements %{{.+}} : tensor<f32>
// CHECK: hla.scan exclusive
// CHECK: scf.forall
func.func @decayed(%q: tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32> {
  %o = hla.hla2 %q, %q, %q {decay = 0.9 : f64} : (tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32>
  return %o : tensor<1x20x1x4xf32>
}
