// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 form=fused anchor-rows=8" | FileCheck %s

// Tests the work LinSimp's anchor window does once per chunk and once per
// offset: the queries are scaled by √τ (d = 8: 8^-¼) once, before the
// window's loop, and each offset multiplies them by its anchors' rows; the
// sums over the window are updated by one multiply-add an element,
// Σ·rescale + u ⊙ num and D·rescale + den.

// CHECK-LABEL: func.func @window
// CHECK:       arith.constant 0.594603539 : f32
// CHECK:       %[[ROOT:.+]] = arith.constant 0.594603539 : f32
// CHECK-NEXT:  tensor.empty() : tensor<8x8xf32>
// CHECK-NEXT:  %[[SCALED:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<8x8xf32>) outs(%{{.+}} : tensor<8x8xf32>)
// CHECK-NEXT:  ^bb0(%[[Q:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:    %[[QS:.+]] = arith.mulf %[[Q]], %[[ROOT]] : f32
// CHECK-NEXT:    linalg.yield %[[QS]] : f32
// CHECK:       scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[SUM:[^ ]+]] = %{{.+}}, %[[DEN:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[SCALED]], %{{.+}} : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK-NEXT:    ^bb0(%{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      linalg.yield
// CHECK-NOT:     %[[ROOT]]
// CHECK:         %[[RESCALED:.+]] = linalg.generic {{.*}} ins(%[[SUM]], %[[RESCALE:.+]] : tensor<8x4xf32>, tensor<8xf32>)
// CHECK:         %[[NEWSUM:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %{{.+}}, %[[RESCALED]] : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
// CHECK-NEXT:    ^bb0(%[[U:.+]]: f32, %[[NUM:.+]]: f32, %[[OLD:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[S:.+]] = math.fma %[[U]], %[[NUM]], %[[OLD]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[NEWDEN:.+]] = linalg.generic {{.*}} ins(%[[DEN]], %[[RESCALE]], %{{.+}} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    ^bb0(%[[D:.+]]: f32, %[[F:.+]]: f32, %[[DD:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[E:.+]] = math.fma %[[D]], %[[F]], %[[DD]] : f32
// CHECK-NEXT:      linalg.yield %[[E]] : f32
// CHECK:         linalg.copy ins(%[[NEWSUM]] : tensor<8x4xf32>) outs(%[[SUM]] : tensor<8x4xf32>)
// CHECK:         linalg.copy ins(%[[NEWDEN]] : tensor<8xf32>) outs(%[[DEN]] : tensor<8xf32>)
func.func @window(%q: tensor<1x32x1x8xf32>, %k: tensor<1x32x1x8xf32>, %v: tensor<1x32x1x4xf32>, %r: tensor<1x32x1x8xf32>, %u: tensor<1x32x1x4xf32>, %omega: tensor<64x8xf32>) -> tensor<1x32x1x4xf32> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 4 : i64} : (tensor<1x32x1x8xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<64x8xf32>) -> tensor<1x32x1x4xf32>
  return %o : tensor<1x32x1x4xf32>
}
