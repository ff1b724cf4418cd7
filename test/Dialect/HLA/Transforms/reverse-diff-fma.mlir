// RUN: hla-opt %s --test-hla-reverse-diff --cse | FileCheck %s

// Tests math.fma's rule: the cotangent of exp2(fma(a, b, c)) reaches a as
// exp2(...)·ln2·b times the output's cotangent, b as exp2(...)·ln2·a, and
// c as exp2(...)·ln2 (LinSimp's features are 2^(z log₂e + β)).
#id = affine_map<(i) -> (i)>
// CHECK-LABEL: func.func @fma_exp2_vjp
// CHECK:         linalg.generic
// CHECK:         ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %[[C:.+]]: f32, %[[DY:.+]]: f32, %[[OUT:.+]]: f32):
// CHECK:           %[[F:.+]] = math.fma %[[A]], %[[B]], %[[C]] : f32
// CHECK:           %[[E:.+]] = math.exp2 %[[F]] : f32
// CHECK:           %[[S:.+]] = arith.mulf %[[E]], %{{.+}} : f32
// CHECK:           %[[SB:.+]] = arith.mulf %[[S]], %[[B]] : f32
// CHECK:           arith.mulf %[[DY]], %[[SB]] : f32
// CHECK:         linalg.generic
// CHECK:         ^bb0(%[[A2:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32, %[[DY2:.+]]: f32, %{{.+}}: f32):
// CHECK:           %[[S2:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK:           %[[SA:.+]] = arith.mulf %[[S2]], %[[A2]] : f32
// CHECK:           arith.mulf %[[DY2]], %[[SA]] : f32
// CHECK:         linalg.generic
// CHECK:         ^bb0(%{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %[[DY3:.+]]: f32, %{{.+}}: f32):
// CHECK:           %[[E3:.+]] = math.exp2
// CHECK:           %[[S3:.+]] = arith.mulf %[[E3]], %{{.+}} : f32
// CHECK-NEXT:      arith.mulf %[[DY3]], %[[S3]] : f32
func.func @fma_exp2(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %w: f32, %z: f32, %out: f32):
    %f = math.fma %x, %w, %z : f32
    %p = math.exp2 %f : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}
