// RUN: hla-opt %s --hla-derive-vjp | FileCheck %s --check-prefix=DERIVE
// RUN: hla-opt %s --hla-derive-vjp --hla-lower-linsimp-exact="chunk-size=4" | FileCheck %s

// Tests LinSimp's exact kernel differentiated: hla-derive-vjp makes an
// hla.linsimp_exact_vjp (Ω, which the kernel does not read, gets zeros),
// and hla-lower-linsimp-exact lowers it (11 tokens in chunks of 4, W = 3)
// to a pass over (batch entry, query chunk, head) writing each query's
// log-normaliser (μ + log D) and −ḡ · o, then a pass over (batch entry,
// head) running over the query chunks in turn, each (anchor offset, key
// chunk up to the query's) block reversed, adding into whole rows of the
// keys' (padded to 12) and anchors' (from W − 1 = 2 rows before token 0:
// 14) gradients.

// DERIVE-LABEL: func.func @main
// DERIVE:         %[[DQ:[^ ,]+]], %[[DK:[^ ,]+]], %[[DV:[^ ,]+]], %[[DR:[^ ,]+]], %[[DU:[^ ,]+]] = hla.linsimp_exact_vjp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} cotangent(%{{.+}}) {scale = 5.000000e-01 : f64, window = 3 : i64}
// DERIVE:         %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x4xf32>)
// DERIVE:         return %[[DQ]], %[[DK]], %[[DV]], %[[DR]], %[[DU]], %[[Z]]

// CHECK-LABEL: func.func @main
// CHECK:         %[[NORM:.+]]:2 = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 3, 2) shared_outs({{.*}}) -> (tensor<1x2x11xf32>, tensor<1x2x11xf32>)
// CHECK:           math.log
// CHECK:         %[[G:.+]]:5 = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs({{.*}}) -> (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>)
// CHECK:           scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args({{.*}}) -> (tensor<12x4xf32>, tensor<12x4xf32>, tensor<12x3xf32>, tensor<14x4xf32>, tensor<14x3xf32>)
// CHECK-DAG:         tensor.extract_slice %[[NORM]]#0
// CHECK-DAG:         tensor.extract_slice %[[NORM]]#1
// CHECK:             scf.for {{.*}} -> (tensor<4x4xf32>, tensor<6x4xf32>, tensor<6x3xf32>, tensor<12x4xf32>, tensor<12x3xf32>)
// CHECK:               scf.for {{.*}} -> (tensor<4x4xf32>, tensor<6x4xf32>, tensor<6x3xf32>, tensor<12x4xf32>, tensor<12x3xf32>)
// CHECK:           scf.forall.in_parallel
// CHECK-COUNT-5:     tensor.parallel_insert_slice
// CHECK:         return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3, %[[G]]#4
func.func @main(%q: tensor<1x11x2x4xf32>, %k: tensor<1x11x2x4xf32>, %v: tensor<1x11x2x3xf32>, %r: tensor<1x11x2x4xf32>, %u: tensor<1x11x2x3xf32>, %omega: tensor<8x4xf32>) -> tensor<1x11x2x3xf32> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %omega {kernel = #hla.kernel<exact>, window = 3 : i64} : (tensor<1x11x2x4xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<1x11x2x4xf32>, tensor<1x11x2x3xf32>, tensor<8x4xf32>) -> tensor<1x11x2x3xf32>
  return %o : tensor<1x11x2x3xf32>
}
