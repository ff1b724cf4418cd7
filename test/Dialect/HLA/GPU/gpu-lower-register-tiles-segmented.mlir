// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=segmented segments=2 causal-isolation=false" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// Tests hla-gpu-lower-register-tiles on the segmented form (linear
// attention, T = 256 in two runs of two 64-token chunks, two heads): both
// of its loops run on register tiles. The first kernel folds each run's
// summaries Kᵀ·V into a fragment from zero and stores it, a thread's pairs
// of columns as 8-byte stores, into the runs' f32 summaries; the second
// folds the summaries of the runs before its own (read from that buffer
// where the fragment's elements are) into the state, then reads its run
// out like the fused form.

// CHECK: remark: register tiles: 1 contractions on wgmma, {{.*}}, 1 warpgroup(s)
// CHECK: remark: register tiles: 4 contractions on wgmma, {{.*}}, 1 warpgroup(s)
// The same for @decayed (below; remarks come first).
// CHECK: remark: register tiles: 1 contractions on wgmma, {{.*}}, 1 warpgroup(s)
// CHECK: remark: register tiles: 4 contractions on wgmma, {{.*}}, 1 warpgroup(s)
// CHECK-LABEL: func.func @linear
// CHECK: %[[RUNS:.*]] = memref.alloc() : memref<1x2x2x64x64xf32>
// CHECK: %[[SUMMARIES:.*]] = bufferization.to_tensor %[[RUNS]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4
// CHECK: scf.for
// CHECK: nvvm.wgmma.mma_async
// CHECK: scf.yield
// CHECK: vector.store {{.*}}, %[[RUNS]][{{.*}}] {alignment = 8 : i64} : memref<1x2x2x64x64xf32>, vector<2xf32>
// CHECK: gpu.terminator
// CHECK: %[[READ:.*]] = bufferization.to_buffer %[[SUMMARIES]] read_only
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4
// The runs before this one: from 0 to the run's index.
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c1{{.*}} iter_args({{.*}}) -> (f32, f32
// CHECK: %[[S:.*]] = memref.load %[[READ]][%{{.*}}] : memref<1x2x2x64x64xf32>
// CHECK-NEXT: arith.addf %{{.*}}, %[[S]] : f32
// CHECK: scf.for
// CHECK: nvvm.wgmma.mma_async
// CHECK: gpu.terminator
func.func @linear(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}

// With a decay each run's summary has a 0-d component, the run's total
// decay, carried by the summary loop as one scalar per thread and stored by
// the first thread; the readout kernel's threads each read it to scale the
// state by it before adding the run's summary.

// CHECK-LABEL: func.func @decayed
// CHECK: %[[DECAYS:.*]] = memref.alloc() : memref<1x2x2xf32>
// CHECK: %[[RUNDECAYS:.*]] = bufferization.to_tensor %[[DECAYS]]
// CHECK: gpu.launch
// CHECK: %[[LOOP:.*]]:33 = scf.for {{.*}} -> (f32,
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: memref.store %[[LOOP]]#32, %[[DECAYS]][{{.*}}] : memref<1x2x2xf32>
// CHECK: %[[READ:.*]] = bufferization.to_buffer %[[RUNDECAYS]] read_only
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: memref.load %[[READ]][{{.*}}] : memref<1x2x2xf32>
func.func @decayed(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
