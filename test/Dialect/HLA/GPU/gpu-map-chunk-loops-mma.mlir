// RUN: hla-opt %s --hla-gpu-map-chunk-loops --canonicalize --cse | FileCheck %s
// RUN: hla-opt %s --hla-gpu-map-chunk-loops=tensor-cores=off | FileCheck %s --check-prefix=OFF

// Tests that hla-gpu-map-chunk-loops runs a contraction C += A·B (16x16
// by 16x8) on warp tensor cores when the loop reads bf16 data: each warp
// (threadIdx / 32) takes 16-row tasks, packs A and B elements as bf16 pairs
// (low half first) and issues mma.sync.m16n8k16 with f32 accumulators that
// go back to C. C was zero-filled just before: the fill is left out and the
// accumulators start at zero. With tensor-cores=off the contraction is a
// per-thread f32 reduction loop.

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @product
// CHECK: gpu.launch
// CHECK: %[[WARP:.+]] = arith.divui %{{.+}}, %c32 : index
// CHECK: scf.for %{{.+}} = %[[WARP]] to
// CHECK:   arith.truncf %{{.+}} : f32 to bf16
// CHECK:   arith.bitcast %{{.+}} : bf16 to i16
// CHECK:   arith.shli
// CHECK:   %[[MMA:.+]] = nvvm.mma.sync A[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}]  B[%{{.+}}, %{{.+}}]  C[%[[ZERO:[^,]+]], %[[ZERO]], %[[ZERO]], %[[ZERO]]]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:   llvm.extractvalue %[[MMA]][3]
// CHECK:   memref.store
// CHECK: gpu.barrier

// OFF-LABEL: func.func @product
// OFF-NOT: nvvm.mma.sync
// OFF: scf.for
// OFF: arith.mulf
// OFF: arith.addf
// OFF-NOT: nvvm.mma.sync
func.func @product(%x: memref<2x16x16xbf16>, %y: memref<2x16x8xbf16>, %z: memref<2x16x8xf32>) {
  scf.forall (%i) in (2) {
    %sx = memref.subview %x[%i, 0, 0] [1, 16, 16] [1, 1, 1] : memref<2x16x16xbf16> to memref<16x16xbf16, strided<[16, 1], offset: ?>>
    %sy = memref.subview %y[%i, 0, 0] [1, 16, 8] [1, 1, 1] : memref<2x16x8xbf16> to memref<16x8xbf16, strided<[8, 1], offset: ?>>
    %a = memref.alloc() : memref<16x16xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%sx : memref<16x16xbf16, strided<[16, 1], offset: ?>>) outs(%a : memref<16x16xf32>) {
    ^bb0(%v: bf16, %o: f32):
      %e = arith.extf %v : bf16 to f32
      linalg.yield %e : f32
    }
    %b = memref.alloc() : memref<16x8xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%sy : memref<16x8xbf16, strided<[8, 1], offset: ?>>) outs(%b : memref<16x8xf32>) {
    ^bb0(%v: bf16, %o: f32):
      %e = arith.extf %v : bf16 to f32
      linalg.yield %e : f32
    }
    %c = memref.alloc() : memref<16x8xf32>
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%c : memref<16x8xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<16x16xf32>, memref<16x8xf32>) outs(%c : memref<16x8xf32>) {
    ^bb0(%l: f32, %r: f32, %acc: f32):
      %p = arith.mulf %l, %r : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
    %sz = memref.subview %z[%i, 0, 0] [1, 16, 8] [1, 1, 1] : memref<2x16x8xf32> to memref<16x8xf32, strided<[8, 1], offset: ?>>
    memref.copy %c, %sz : memref<16x8xf32> to memref<16x8xf32, strided<[8, 1], offset: ?>>
  }
  return
}
