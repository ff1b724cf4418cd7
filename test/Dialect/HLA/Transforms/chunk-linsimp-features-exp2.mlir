// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 form=fused anchor-rows=8" | FileCheck %s

// Tests the form of LinSimp's anchor features in the window's loop:
// m^-½ exp(z − ‖x‖²/2 − μ) as 2^(z log₂e + β), β one value per row,
// log₂(m^-½) − (‖x‖²/2 + μ) log₂e (here m = 64: −3), or −∞ for a padding
// anchor; each feature is then one multiply-add and one exp2.

// CHECK-LABEL: func.func @features
// CHECK:     scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.*}}) -> (tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:       %[[BETA:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%{{.+}} : tensor<8xf32>)
// CHECK-NEXT:  ^bb0(%[[HALF:.+]]: f32, %[[VALID:.+]]: f32, %[[MU:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:    %[[DOWN:.+]] = arith.addf %[[HALF]], %[[MU]] : f32
// CHECK-NEXT:    %[[NLOG2E:.+]] = arith.constant -1.44269502 : f32
// CHECK-NEXT:    %[[LOGNORM:.+]] = arith.constant -3.000000e+00 : f32
// CHECK-NEXT:    %[[SCALED:.+]] = math.fma %[[DOWN]], %[[NLOG2E]], %[[LOGNORM]] : f32
// CHECK-NEXT:    %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[REAL:.+]] = arith.cmpf ogt, %[[VALID]], %[[ZERO]] : f32
// CHECK-NEXT:    %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:    %[[SEL:.+]] = arith.select %[[REAL]], %[[SCALED]], %[[NINF]] : f32
// CHECK-NEXT:    linalg.yield %[[SEL]] : f32
// CHECK:       linalg.generic {{.*}} ins(%{{.+}}, %[[BETA]] : tensor<8x64xf32>, tensor<8xf32>) outs(%{{.+}} : tensor<8x64xf32>)
// CHECK-NEXT:  ^bb0(%[[Z:.+]]: f32, %[[B:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:    %[[LOG2E:.+]] = arith.constant 1.44269502 : f32
// CHECK-NEXT:    %[[E:.+]] = math.fma %[[Z]], %[[LOG2E]], %[[B]] : f32
// CHECK-NEXT:    %[[F:.+]] = math.exp2 %[[E]] : f32
// CHECK-NEXT:    linalg.yield %[[F]] : f32
func.func @features(%q: tensor<1x32x1x8xf32>, %k: tensor<1x32x1x8xf32>, %v: tensor<1x32x1x4xf32>, %r: tensor<1x32x1x8xf32>, %u: tensor<1x32x1x4xf32>, %omega: tensor<64x8xf32>) -> tensor<1x32x1x4xf32> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 4 : i64} : (tensor<1x32x1x8xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<64x8xf32>) -> tensor<1x32x1x4xf32>
  return %o : tensor<1x32x1x4xf32>
}
