// RUN: hla-opt %s --hla-expand --hla-chunk=chunk-size=16 | FileCheck %s

// Tests that with cu_seqlens hla-chunk gives every sequence its own chunks:
// ceil(T/c) + N chunk slots, the offsets checked once at run time (a
// reduction over the sequences to one code, one bit per broken rule, then
// an assertion per rule), a slot table built at run time (per slot: start,
// length and owning sequence; per sequence: its first slot), and a
// per-sequence scan over the chunk slots.

// CHECK-LABEL: func.func @packed
// CHECK-SAME: %[[CU:[^:]+]]: tensor<4xi32>
// CHECK: %[[FROM:.+]] = tensor.extract_slice %[[CU]][0] [3] [1]
// CHECK: %[[TO:.+]] = tensor.extract_slice %[[CU]][1] [3] [1]
// CHECK: %[[CODE:.+]] = linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}} ins(%[[FROM]], %[[TO]] : tensor<3xi32>, tensor<3xi32>) outs(%{{.+}} : tensor<i64>)
// CHECK: %[[C:.+]] = tensor.extract %[[CODE]][] : tensor<i64>
// CHECK: cf.assert %{{.+}}, "hla: cu_seqlens[0] must be 0"
// CHECK: cf.assert %{{.+}}, "hla: cu_seqlens must end at the packed length T"
// CHECK: cf.assert %{{.+}}, "hla: cu_seqlens must not decrease"
// CHECK: %[[TABLE:.+]]:5 = scf.for
// CHECK-NOT: cf.assert
// CHECK:   arith.ceildivsi
// CHECK: %[[OFFSETS:.+]] = tensor.insert %[[TABLE]]#3 into %[[TABLE]]#2
// 100 tokens in chunks of 16 plus 3 sequences: 10 slots.
// CHECK: scf.forall (%{{.+}}, %[[SLOT:.+]], %{{.+}}) in (1, 10, 2)
// CHECK:   tensor.extract %[[TABLE]]#0[%[[SLOT]]] : tensor<10xi64>
// CHECK:   tensor.extract %[[TABLE]]#1[%[[SLOT]]] : tensor<10xi64>
// CHECK: hla.scan exclusive #{{.+}} init(%{{.+}}) cu_seqlens(%[[OFFSETS]]) : {{.*}} -> (tensor<1x10x2x8x8xf32>, tensor<3x2x8x8xf32>)
func.func @packed(%q: tensor<1x100x2x8xf32>, %cu: tensor<4xi32>, %p0: tensor<3x2x8x8xf32>) -> (tensor<1x100x2x8xf32>, tensor<3x2x8x8xf32>) {
  %o, %p = hla.linear_attention %q, %q, %q initial_state(%p0) cu_seqlens(%cu) : (tensor<1x100x2x8xf32>, tensor<1x100x2x8xf32>, tensor<1x100x2x8xf32>, tensor<3x2x8x8xf32>, tensor<4xi32>) -> (tensor<1x100x2x8xf32>, tensor<3x2x8x8xf32>)
  return %o, %p : tensor<1x100x2x8xf32>, tensor<3x2x8x8xf32>
}
