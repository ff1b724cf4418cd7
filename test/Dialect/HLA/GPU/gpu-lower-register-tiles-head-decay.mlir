// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --hla-gpu-distribute-graph-ops --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --hla-gpu-distribute-graph-ops --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles" | FileCheck %s --check-prefix=LOWER

// Tests register tiles with a decay rate per head (`head_decay`): the chunk
// loop is placed, each thread reading its head's rate from device memory
// (a 0-d slice) and taking its log; the run-time check of
// the rates, a loop of the graph's (hla.graph_loop), is left to
// hla-gpu-map-chunk-loops even with generator = tiles, which places every
// chunk loop or fails.

// CHECK-NOT: error
// CHECK: remark: register tiles:
// CHECK-NOT: error

// LOWER-LABEL: func.func @linear
// The rates' check: a one-block loop of the graph, not lowered here.
// LOWER: scf.forall (%{{.+}}) in (1) {{.*}} -> (tensor<i64>)
// LOWER: } {hla.graph_loop, mapping = [#gpu.block<x>]}
// LOWER: cf.assert %{{.+}}, "hla: head_decay rates must be in (0, 1]"
// The chunk loop's kernel: in each chunk every thread reads its head's
// rate from device memory and takes its log; the masks' weights are its
// exponentials.
// LOWER: gpu.launch
// LOWER: %[[RATE:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<2xf32>
// LOWER: math.log %[[RATE]] : f32
// LOWER: math.exp
func.func @linear(%q: tensor<1x256x2x64xbf16>, %g: tensor<2xf32>) -> tensor<1x256x2x64xbf16> {
  %o = hla.linear_attention %q, %q, %q head_decay(%g) : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<2xf32>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
