// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand rewrites favor LinSimp into key features, the
// additive (M, a) monoid and the windowed anchor readout, carrying the state
// split between the scan (M, a) and the readout (anchor halo); exact LinSimp
// has no finite state and stays.

// CHECK: #[[$LS:linsimp]] = #hla.monoid<"linsimp" inputs(phi: [m], v: [dv], f: [m]) state(M: [m, dv], a: [m]) token(M = phi * v.T, a = phi) combine(M = M.a + M.b, a = a.a + a.b) readout(num = f.T * M, den = f.T * a)>

// CHECK-LABEL: func.func @favor_state
// CHECK-SAME: (%[[Q:[^:]+]]: {{[^,]+}}, %[[K:[^:]+]]: {{[^,]+}}, %[[V:[^:]+]]: {{[^,]+}}, %[[R:[^:]+]]: {{[^,]+}}, %[[U:[^:]+]]: {{[^,]+}}, %[[OM:[^:]+]]: {{[^,]+}}, %[[M0:[^:]+]]: {{[^,]+}}, %[[A0:[^:]+]]: {{[^,]+}}, %[[AR:[^:]+]]: {{[^,]+}}, %[[AU:[^:]+]]: {{[^,]+}}, %[[AV:[^:]+]]: {{[^)]+}})
// CHECK: %[[PHI:.+]] = hla.feature_map %[[K]], %[[OM]] {scale = 0.353553{{[0-9]+}} : f64} : (tensor<1x32x1x8xf32>, tensor<64x8xf32>) -> tensor<1x32x1x64xf32>
// CHECK: %[[SEG:.+]]:2 = hla.segment #[[$LS]](%[[PHI]], %[[V]]) : (tensor<1x32x1x64xf32>, tensor<1x32x1x4xf32>) -> (tensor<1x32x2x64x4xf32>, tensor<1x32x2x64xf32>)
// CHECK: %[[S:.+]]:4 = hla.scan #[[$LS]](%[[SEG]]#0, %[[SEG]]#1) init(%[[M0]], %[[A0]])
// CHECK: %[[O:.+]], %[[FA:.+]]:3 = hla.anchor_readout #[[$LS]](%[[Q]], %[[R]], %[[U]]) omega(%[[OM]]) state(%[[S]]#0, %[[S]]#1) anchors(%[[AR]], %[[AU]], %[[AV]]) {scale = 0.353553{{[0-9]+}} : f64, window = 4 : i64}
// CHECK: return %[[O]], %[[S]]#2, %[[S]]#3, %[[FA]]#0, %[[FA]]#1, %[[FA]]#2
func.func @favor_state(%q: tensor<1x32x2x8xf32>, %k: tensor<1x32x1x8xf32>, %v: tensor<1x32x1x4xf32>, %r: tensor<1x32x1x8xf32>, %u: tensor<1x32x1x4xf32>, %omega: tensor<64x8xf32>,
                       %m0: tensor<1x2x64x4xf32>, %a0: tensor<1x2x64xf32>, %ar: tensor<1x2x3x8xf32>, %au: tensor<1x2x3x4xf32>, %av: tensor<1x2x3xf32>)
    -> (tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) {
  %o:6 = hla.linsimp %q, %k, %v, %r, %u, %omega initial_state(%m0, %a0, %ar, %au, %av) {window = 4 : i64} : (tensor<1x32x2x8xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<1x32x1x8xf32>, tensor<1x32x1x4xf32>, tensor<64x8xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) -> (tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>)
  return %o#0, %o#1, %o#2, %o#3, %o#4, %o#5 : tensor<1x32x2x4xf32>, tensor<1x2x64x4xf32>, tensor<1x2x64xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>
}

// CHECK-LABEL: func.func @exact_kept
// CHECK: hla.linsimp {{.*}}kernel = #hla.kernel<exact>
// CHECK-NOT: hla.segment
func.func @exact_kept(%q: tensor<1x32x2x8xf32>, %omega: tensor<64x8xf32>) -> tensor<1x32x2x8xf32> {
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega {kernel = #hla.kernel<exact>} : (tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<64x8xf32>) -> tensor<1x32x2x8xf32>
  return %o : tensor<1x32x2x8xf32>
}
