// RUN: hla-opt %s --hla-gpu-map-chunk-loops --canonicalize | FileCheck %s
// RUN: hla-opt %s --hla-gpu-map-chunk-loops=max-shared-memory=16384 --canonicalize | FileCheck %s --check-prefix=TIGHT

// Tests that tiles whose rows are a multiple of 128 bytes (here 32 floats)
// get 16 bytes of padding per row in shared memory, so that a column's
// elements fall in different banks: the tile is the [64, 32] part of a
// [64, 36] view (row stride 36), 9216 bytes per tile. When the padded tiles
// do not fit the shared-memory limit, they are packed without padding.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @transpose
// CHECK: %[[BYTES:.+]] = arith.constant 18432 : i32
// CHECK: gpu.launch {{.+}} dynamic_shared_memory_size %[[BYTES]]
// CHECK:   %[[WHOLE:.+]] = memref.view %{{.+}}[%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x36xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[TILE:.+]] = memref.subview %[[WHOLE]][0, 0] [64, 32] [1, 1] : memref<64x36xf32, #gpu.address_space<workgroup>> to memref<64x32xf32, strided<[36, 1]>, #gpu.address_space<workgroup>>
// CHECK:   memref.store %{{.+}}, %[[TILE]]

// TIGHT-LABEL: func.func @transpose
// TIGHT: %[[BYTES:.+]] = arith.constant 16384 : i32
// TIGHT: memref.view %{{.+}}[%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x32xf32, #gpu.address_space<workgroup>>
// TIGHT-NOT: strided<[36, 1]>
func.func @transpose(%x: memref<2x64x32xf32>, %y: memref<2x32x64xf32>) {
  scf.forall (%b) in (2) {
    %t = memref.alloc() : memref<64x32xf32>
    %sx = memref.subview %x[%b, 0, 0] [1, 64, 32] [1, 1, 1] : memref<2x64x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
    memref.copy %sx, %t : memref<64x32xf32, strided<[32, 1], offset: ?>> to memref<64x32xf32>
    %u = memref.alloc() : memref<64x32xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : memref<64x32xf32>) outs(%u : memref<64x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    }
    %sy = memref.subview %y[%b, 0, 0] [1, 32, 64] [1, 1, 1] : memref<2x32x64xf32> to memref<32x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%u : memref<64x32xf32>) outs(%sy : memref<32x64xf32, strided<[64, 1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    }
    memref.dealloc %t : memref<64x32xf32>
    memref.dealloc %u : memref<64x32xf32>
  }
  return
}
