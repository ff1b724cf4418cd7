// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=4 form=fused value-tile=2" | FileCheck %s

// Tests hla-chunk's value tiles on hla2 with its final state: C and G have
// value columns and are cut; S has none, so every value tile computes all
// of it. Each tile writes its own copy of the final S (parallel writes may
// not overlap) into a [sequences, heads, tiles, d, d] tensor, and the first
// tile's copy is the result.

// CHECK-LABEL: func.func @hla2
// CHECK: %[[R:.+]]:4 = scf.forall (%[[S:.+]], %[[H:.+]], %[[J:.+]]) in (1, 2, 2) shared_outs({{.+}}) -> (tensor<1x9x2x4xf32>, tensor<1x2x2x3x3xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
// CHECK:   scf.for {{.+}} -> (tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<?x2xf32>)
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[S]], %[[H]], %[[J]], 0, 0] [1, 1, 1, 3, 3]
// CHECK:     tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[S]], %[[H]], 0, %{{.+}}] [1, 1, 3, 2]
// CHECK:     tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[S]], %[[H]], 0, %{{.+}}] [1, 1, 3, 2]
// CHECK: %[[FIRST:.+]] = tensor.extract_slice %[[R]]#1[0, 0, 0, 0, 0] [1, 2, 1, 3, 3] [1, 1, 1, 1, 1] : tensor<1x2x2x3x3xf32> to tensor<1x2x3x3xf32>
// CHECK: return %[[R]]#0, %[[FIRST]], %[[R]]#2, %[[R]]#3
func.func @hla2(%q: tensor<1x9x2x3xf32>, %k: tensor<1x9x2x3xf32>, %v: tensor<1x9x2x4xf32>, %s0: tensor<1x2x3x3xf32>, %c0: tensor<1x2x3x4xf32>, %g0: tensor<1x2x3x4xf32>) -> (tensor<1x9x2x4xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %o:4 = hla.hla2 %q, %k, %v initial_state(%s0, %c0, %g0) {scale = 1.0 : f64} : (tensor<1x9x2x3xf32>, tensor<1x9x2x3xf32>, tensor<1x9x2x4xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x9x2x4xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
  return %o#0, %o#1, %o#2, %o#3 : tensor<1x9x2x4xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}
