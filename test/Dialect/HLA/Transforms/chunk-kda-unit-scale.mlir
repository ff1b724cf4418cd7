// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=4 form=fused" | FileCheck %s

// Tests that KDA with scale = 1 is chunked in the WY/UT form like any other
// scale: its monoid, simplified, has no scale parameter and reads out
// q.T * S, and is still the gated delta rule (it once fell through to the
// index plans and failed: "matrix-valued transitions need their own
// chunked form").
// CHECK-LABEL: func.func @kda
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 2)
// CHECK:           scf.for
// CHECK:             arith.divui %{{.+}}, %c2{{.*}} : index
// CHECK-NOT:     hla.scan
func.func @kda(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %g: tensor<1x8x2x4xf32>, %beta: tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 1.0 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> tensor<1x8x2x6xf32>
  return %o : tensor<1x8x2x6xf32>
}
