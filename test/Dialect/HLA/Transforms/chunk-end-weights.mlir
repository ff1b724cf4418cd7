// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=8 form=fused causal-isolation=false" | FileCheck %s

// Tests the weights a chunk summary puts on its tokens, γ^(E − v) up to the
// chunk's last token E and 0 past it (T = 20: the last chunk has 4 tokens).
// Without decay they are 1 and 0, which the token tiles already are past
// the chunk's length (its rows are inserted into a zero tile): the summary
// kᵀ·v contracts the two token tiles directly. With decay the weights are
// a vector of the chunk's length, scaling k's rows.

// CHECK-LABEL: func.func @plain
// CHECK: scf.for
// CHECK: %[[K:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%[[LEN:.+]], 4] [1, 1] : tensor<?x4xf32> into tensor<8x4xf32>
// CHECK: %[[V:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%[[LEN]], 4] [1, 1] : tensor<?x4xf32> into tensor<8x4xf32>
// CHECK-NOT: arith.subi %[[LEN]]
// CHECK: %[[SUMMARY:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[K]], %[[V]] : tensor<8x4xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK: hla.combine #linear_attention(%{{.+}}), (%[[SUMMARY]])
func.func @plain(%q: tensor<1x20x1x4xf32>, %k: tensor<1x20x1x4xf32>, %v: tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32>
  return %o : tensor<1x20x1x4xf32>
}

// CHECK-LABEL: func.func @decayed
// CHECK: scf.for
// CHECK: %[[K:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%[[LEN:.+]], 4] [1, 1] : tensor<?x4xf32> into tensor<8x4xf32>
// CHECK: %[[WEIGHTS:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<8xf32>)
// CHECK:   %[[ROW:.+]] = linalg.index 0
// CHECK:   %[[LAST:.+]] = arith.subi %[[LEN]], %{{.+}}
// CHECK:   %[[AHEAD:.+]] = arith.subi %[[LAST]], %[[ROW]]
// CHECK:   %[[INSIDE:.+]] = arith.cmpi sge, %[[AHEAD]], %{{.+}}
// CHECK:   math.exp
// CHECK:   arith.select %[[INSIDE]]
// CHECK: %[[WEIGHTED:.+]] = linalg.generic {{.*}} ins(%[[K]], %[[WEIGHTS]] : tensor<8x4xf32>, tensor<8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[WEIGHTED]], %{{.+}} : tensor<8x4xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
func.func @decayed(%q: tensor<1x20x1x4xf32>, %k: tensor<1x20x1x4xf32>, %v: tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32>
  return %o : tensor<1x20x1x4xf32>
}
