// RUN: hla-opt %s --hla-expand --hla-chunk=chunk-size=8 | FileCheck %s
// RUN: hla-opt %s --hla-expand --hla-chunk="chunk-size=8 causal-isolation=false" | FileCheck %s --check-prefix=OFF

// Tests causal isolation in the chunk readouts: a chunk whose plain rows
// hold a non-finite value (a non-finite token spoils earlier rows only
// through zero weights, 0 · NaN = NaN) finds the first token row holding
// one and reads the chunk out again with every token tile zeroed from that
// row on, then takes the rows before it from that read-out (NaN from it
// on), written over the plain rows in place. The common path pays one multiply-add per
// output value. Off: no branch.

// CHECK-LABEL: func.func @isolated
// CHECK: hla.scan exclusive
// CHECK: scf.forall
// CHECK:   %[[LEN:[^ ]+]] = arith.minsi
// CHECK:   %[[Q:[^ ]+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%[[LEN]], 4]
// CHECK:   %[[K:[^ ]+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%[[LEN]], 4]
// CHECK:   %[[V:[^ ]+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [%[[LEN]], 4]
// The plain rows: q·S + (mask ⊙ qkᵀ)·v.
// CHECK:   %[[ROWS:[^ ]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{[^ ]+}}, %{{[^ ]+}} : tensor<8x4xf32>, tensor<8x4xf32>) outs(%{{[^ ]+}} : tensor<8x4xf32>)
// CHECK:     arith.addf %in, %in_{{[0-9]+}} : f32
// Σ x · 0 over the plain rows: NaN exactly when one is NaN or ±inf.
// CHECK:   %[[INIT:[^ ]+]] = linalg.fill ins(%{{[^ ]+}} : f32) outs(%{{[^ ]+}} : tensor<f32>)
// CHECK:   %[[S2:[^ ]+]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[ROWS]] : tensor<8x4xf32>) outs(%[[INIT]] : tensor<f32>)
// CHECK:     %[[Z:[^ ]+]] = arith.constant 0.0{{0*}}e+00 : f32
// CHECK:     %[[XZ:[^ ]+]] = arith.mulf %in, %[[Z]]
// CHECK:     arith.addf %out, %[[XZ]]
// CHECK:   %[[SUM:[^ ]+]] = tensor.extract %[[S2]][]
// CHECK:   %[[POISONED:[^ ]+]] = arith.cmpf uno, %[[SUM]], %[[SUM]]
// CHECK:   %[[OUT:[^ ]+]] = scf.if %[[POISONED]] -> (tensor<8x4xf32>) {
// Only there: the first row holding one (a min over the rows where
// |x| < inf fails, NaN failing it too; 8, the chunk, for none).
// CHECK:     %[[NONE:[^ ]+]] = arith.constant 8.0{{0*}}e+00 : f32
// CHECK-NEXT: tensor.empty() : tensor<f32>
// CHECK-NEXT: %[[FINIT:[^ ]+]] = linalg.fill ins(%[[NONE]] : f32)
// CHECK:     %[[F0:[^ ]+]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<8x4xf32>) outs(%[[FINIT]] : tensor<f32>)
// CHECK:       %[[ABS:[^ ]+]] = math.absf
// CHECK:       %[[INF:[^ ]+]] = arith.constant 0x7F800000 : f32
// CHECK:       %[[FINITE:[^ ]+]] = arith.cmpf olt, %[[ABS]], %[[INF]]
// CHECK:       linalg.index 0
// CHECK:       %[[MIN:[^ ]+]] = arith.minimumf
// CHECK:       arith.select %[[FINITE]], %{{[^ ]+}}, %[[MIN]]
// CHECK:     %[[F1:[^ ]+]] = linalg.generic {{.*}} ins(%[[K]] : tensor<8x4xf32>) outs(%[[F0]] : tensor<f32>)
// CHECK:     %[[F2:[^ ]+]] = linalg.generic {{.*}} ins(%[[V]] : tensor<8x4xf32>) outs(%[[F1]] : tensor<f32>)
// CHECK:     %[[FIRSTF:[^ ]+]] = tensor.extract %[[F2]][]
// CHECK:     %[[FIRSTI:[^ ]+]] = arith.fptosi %[[FIRSTF]]
// CHECK:     %[[FIRST:[^ ]+]] = arith.index_cast %[[FIRSTI]]
// The chunk again, its token tiles zeroed from `first` on.
// CHECK:     linalg.generic {{.*}} ins(%[[Q]] : tensor<8x4xf32>)
// CHECK:       %[[R:[^ ]+]] = linalg.index 0
// CHECK:       %[[KEEP:[^ ]+]] = arith.cmpi slt, %[[R]], %[[FIRST]]
// CHECK:       arith.select %[[KEEP]], %{{.+}}, %{{.+}}
// CHECK:     linalg.generic {{.*}} ins(%[[K]] : tensor<8x4xf32>)
// CHECK:     linalg.generic {{.*}} ins(%[[V]] : tensor<8x4xf32>)
// The merge: rows below `first` from the second read-out, NaN from there
// on (each depends on the non-finite token), the plain rows not read;
// copied over the plain rows, which the else branch yields as they are.
// CHECK:       %[[NAN:[^ ]+]] = arith.constant 0x7FC00000 : f32
// CHECK-NEXT:  arith.select %{{[^ ]+}}, %in, %[[NAN]] : f32
// CHECK-NEXT:  linalg.yield
// CHECK-NEXT:  } -> tensor<8x4xf32>
// CHECK-NEXT:  %[[COPY:[^ ]+]] = linalg.copy ins(%{{[^ ]+}} : tensor<8x4xf32>) outs(%[[ROWS]] : tensor<8x4xf32>)
// CHECK-NEXT:  scf.yield %[[COPY]]
// CHECK-NEXT:  } else {
// CHECK-NEXT:  scf.yield %[[ROWS]]
// CHECK-NEXT:  }
// CHECK:   tensor.extract_slice %[[OUT]][0, 0] [%[[LEN]], 4]

// OFF-LABEL: func.func @isolated
// OFF-NOT: scf.if
// OFF-NOT: arith.cmpf uno
// OFF: return
func.func @isolated(%q: tensor<1x20x1x4xf32>, %k: tensor<1x20x1x4xf32>, %v: tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>, tensor<1x20x1x4xf32>) -> tensor<1x20x1x4xf32>
  return %o : tensor<1x20x1x4xf32>
}
