// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 form=fused anchor-rows=8 causal-isolation=true" | FileCheck %s

// Tests causal isolation on LinSimp: as for the other ops, the common path
// checks the chunk's output rows (Σ rows · 0 is NaN exactly when a row is
// not finite; a non-finite query or anchor makes its own row so, and
// reaches no row before it). Only in the branch are the keys' features
// made again from the keys, and the query and anchor rows read, to find
// the first non-finite token: the branch reads no tile of the plain
// read-out.

// CHECK-LABEL: func.func @isolated
// CHECK:       %[[SUM:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[ROWS:[^ ]+]] : tensor<8x4xf32>) outs(%{{.+}} : tensor<f32>)
// CHECK:         arith.mulf
// CHECK:       %[[S:.+]] = tensor.extract %[[SUM]][] : tensor<f32>
// CHECK-NEXT:  %[[POISONED:.+]] = arith.cmpf uno, %[[S]], %[[S]] : f32
// CHECK-NEXT:  scf.if %[[POISONED]] -> (tensor<8x4xf32>) {
// CHECK-NEXT:    tensor.extract_slice %arg1[{{.*}}] : tensor<1x32x1x8xf32> to tensor<?x8xf32>
// CHECK:         math.exp
// CHECK:         tensor.extract_slice %arg0[{{.*}}] : tensor<1x32x1x8xf32> to tensor<?x8xf32>
// CHECK:         tensor.extract_slice %arg3[{{.*}}] : tensor<1x32x1x8xf32> to tensor<?x8xf32>
// CHECK:         tensor.extract_slice %arg4[{{.*}}] : tensor<1x32x1x4xf32> to tensor<?x4xf32>
// CHECK:         scf.for
// CHECK:       } else {
// CHECK-NEXT:    scf.yield %[[ROWS]] : tensor<8x4xf32>
func.func @isolated(%q: tensor<1x32x1x8xf32>, %k: tensor<1x32x1x8xf32>, %v: tensor<1x32x1x4xf32>, %r: tensor<1x32x1x8xf32>, %u: tensor<1x32x1x4xf32>, %omega: tensor<16x8xf32>) -> tensor<1x32x1x4xf32> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 4 : i64} : (tensor<1x32x1x8xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<16x8xf32>) -> tensor<1x32x1x4xf32>
  return %o : tensor<1x32x1x4xf32>
}
