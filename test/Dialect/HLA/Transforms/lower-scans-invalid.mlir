// RUN: not hla-opt %s --split-input-file --hla-lower-scans=schedule=blelloch 2>&1 | FileCheck %s --check-prefix=PACKED
// RUN: not hla-opt %s --split-input-file --hla-lower-scans=schedule=fastest 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// Tests that the Blelloch schedule refuses packed sequences and that an
// unknown schedule is reported.

// PACKED: error: hla-lower-scans: the Blelloch schedule does not support packed sequences (cu_seqlens); use sequential or auto
// UNKNOWN: for the --schedule option: Cannot find option named 'fastest'!

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>
func.func @packed(%p: tensor<1x9x2x4x3xf32>, %cu: tensor<4xi32>) -> tensor<1x9x2x4x3xf32> {
  %s = hla.scan #la(%p) cu_seqlens(%cu) : (tensor<1x9x2x4x3xf32>, tensor<4xi32>) -> tensor<1x9x2x4x3xf32>
  return %s : tensor<1x9x2x4x3xf32>
}
