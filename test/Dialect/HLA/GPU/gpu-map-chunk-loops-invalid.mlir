// RUN: hla-opt %s --hla-gpu-map-chunk-loops --split-input-file --verify-diagnostics
// RUN: not hla-opt %s --split-input-file --hla-gpu-map-chunk-loops=block-threads=48 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not hla-opt %s --split-input-file --hla-gpu-map-chunk-loops=tensor-cores=maybe 2>&1 | FileCheck %s --check-prefix=CORES
// RUN: not hla-opt %s --split-input-file --hla-gpu-map-chunk-loops=mma=auto 2>&1 | FileCheck %s --check-prefix=MMA

// Tests the diagnostics of hla-gpu-map-chunk-loops: a loop body that reads
// a value computed outside it (host data), a loop that needs more shared
// memory than a block may use, and bad options.

// THREADS: hla-gpu-map-chunk-loops: block-threads must be a multiple of 32 between 32 and 1024, got 48
// CORES: for the --tensor-cores option: Cannot find option named 'maybe'!
// MMA: hla-gpu-map-chunk-loops: mma must be mma.sync or wgmma (auto is resolved by hla-cuda-pipeline for its chip)

func.func @host_value(%x: memref<2x4xf32>, %n: index) {
  // expected-note @below {{defined here; a GPU kernel can only take function arguments, device buffers and constants}}
  %scale = arith.index_cast %n : index to i32
  scf.forall (%i) in (2) {
    // expected-error @below {{hla-gpu-map-chunk-loops: the chunk loop reads a value computed outside it}}
    %f = arith.sitofp %scale : i32 to f32
    memref.store %f, %x[%i, %i] : memref<2x4xf32>
  }
  return
}

