// RUN: hla-opt %s --hla-lower-scans="schedule=auto scan-threads=2" | FileCheck %s

// Tests the auto schedule's cost model: Blelloch (parallel levels) for one
// long scan with a large state when the other axes would leave threads idle;
// sequential when the batch alone fills the threads or the scan is cheap.

#hla2 = #hla.monoid<"hla2" inputs(q: [d], k: [d], v: [dv])
  state(S: [d, d], C: [d, dv], G: [d, dv])
  token(S = k * k.T, C = q * v.T)
  combine(S = S.a + S.b, C = C.a + C.b, G = G.a + G.b + S.b * C.a)
  readout(num = q.T * S * C - q.T * G)>

// One scan of 64 elements with 32 x 32 states: Blelloch.
// CHECK-LABEL: func.func @long_single
// CHECK: scf.forall
// CHECK-NOT: {{scf.for }}
func.func @long_single(%s: tensor<1x64x1x32x32xf32>, %c: tensor<1x64x1x32x32xf32>, %g: tensor<1x64x1x32x32xf32>) -> tensor<1x64x1x32x32xf32> {
  %r:3 = hla.scan exclusive #hla2(%s, %c, %g) : (tensor<1x64x1x32x32xf32>, tensor<1x64x1x32x32xf32>, tensor<1x64x1x32x32xf32>) -> (tensor<1x64x1x32x32xf32>, tensor<1x64x1x32x32xf32>, tensor<1x64x1x32x32xf32>)
  return %r#2 : tensor<1x64x1x32x32xf32>
}

// Four independent scans already keep two threads busy: sequential.
// CHECK-LABEL: func.func @batched
// CHECK: {{scf.for }}
// CHECK-NOT: scf.forall
func.func @batched(%s: tensor<1x64x4x32x32xf32>, %c: tensor<1x64x4x32x32xf32>, %g: tensor<1x64x4x32x32xf32>) -> tensor<1x64x4x32x32xf32> {
  %r:3 = hla.scan exclusive #hla2(%s, %c, %g) : (tensor<1x64x4x32x32xf32>, tensor<1x64x4x32x32xf32>, tensor<1x64x4x32x32xf32>) -> (tensor<1x64x4x32x32xf32>, tensor<1x64x4x32x32xf32>, tensor<1x64x4x32x32xf32>)
  return %r#2 : tensor<1x64x4x32x32xf32>
}

// A tiny state: the whole scan costs less than splitting it: sequential.
// CHECK-LABEL: func.func @cheap
// CHECK: {{scf.for }}
// CHECK-NOT: scf.forall
func.func @cheap(%s: tensor<1x64x1x2x2xf32>, %c: tensor<1x64x1x2x2xf32>, %g: tensor<1x64x1x2x2xf32>) -> tensor<1x64x1x2x2xf32> {
  %r:3 = hla.scan exclusive #hla2(%s, %c, %g) : (tensor<1x64x1x2x2xf32>, tensor<1x64x1x2x2xf32>, tensor<1x64x1x2x2xf32>) -> (tensor<1x64x1x2x2xf32>, tensor<1x64x1x2x2xf32>, tensor<1x64x1x2x2xf32>)
  return %r#2 : tensor<1x64x1x2x2xf32>
}
