// RUN: hla-opt %s --hla-gpu-map-chunk-loops=block-threads=64 --canonicalize --cse | FileCheck %s

// Tests hla-gpu-map-chunk-loops on a bufferized (sequence) loop: the loop
// becomes a gpu.launch with one 64-thread block per iteration; the three
// 128-byte tiles go to dynamic shared memory, the third (%w) reusing the
// bytes of the first (%t), which is dead by then (256 bytes in all); every
// copy and linalg op is spread over the threads between barriers (32
// elements for 64 threads: one guarded element per thread). A copy of a
// run-time number of rows without a constant bound becomes a
// thread-strided loop.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @scale_rows
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x8x4xf32>, %[[Y:[^:]+]]: memref<2x8x4xf32>)
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[BYTES:.+]] = arith.constant 256 : i32
// CHECK: gpu.launch blocks(%[[B:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C2]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads(%[[TID:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C64]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) dynamic_shared_memory_size %[[BYTES]]
// CHECK:   %[[SMEM:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK:   %[[T:.+]] = memref.view %[[SMEM]][%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8x4xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[SX:.+]] = memref.subview %[[X]][%[[B]], 0, 0]
// CHECK:   gpu.barrier
// CHECK:   %[[IN:.+]] = arith.cmpi ult, %[[TID]], %[[C32]] : index
// CHECK:   scf.if %[[IN]] {
// CHECK:     memref.load %[[SX]]
// CHECK:     memref.store %{{.+}}, %[[T]]
// CHECK:   gpu.barrier
// CHECK:   %[[U:.+]] = memref.view %[[SMEM]][%[[C128]]][]
// CHECK:   scf.if %[[IN]] {
// CHECK:     memref.load %[[T]]
// CHECK:     arith.mulf
// CHECK:     memref.store %{{.+}}, %[[U]]
// CHECK:   gpu.barrier
// CHECK:   scf.if %[[IN]] {
// CHECK:     memref.load %[[U]]
// CHECK:     memref.store %{{.+}}, %[[T]]
// CHECK:   gpu.barrier
// CHECK:   %[[SY:.+]] = memref.subview %[[Y]][%[[B]], 0, 0]
// CHECK:   scf.if %[[IN]] {
// CHECK:     memref.load %[[T]]
// CHECK:     memref.store %{{.+}}, %[[SY]]
// CHECK:   gpu.barrier
// CHECK-NEXT: gpu.terminator
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK-NOT: scf.forall
func.func @scale_rows(%x: memref<2x8x4xf32>, %y: memref<2x8x4xf32>) {
  scf.forall (%b) in (2) {
    %t = memref.alloc() : memref<8x4xf32>
    %sx = memref.subview %x[%b, 0, 0] [1, 8, 4] [1, 1, 1] : memref<2x8x4xf32> to memref<8x4xf32, strided<[4, 1], offset: ?>>
    memref.copy %sx, %t : memref<8x4xf32, strided<[4, 1], offset: ?>> to memref<8x4xf32>
    %u = memref.alloc() : memref<8x4xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : memref<8x4xf32>) outs(%u : memref<8x4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %two = arith.constant 2.0 : f32
      %m = arith.mulf %a, %two : f32
      linalg.yield %m : f32
    }
    memref.dealloc %t : memref<8x4xf32>
    %w = memref.alloc() : memref<8x4xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : memref<8x4xf32>) outs(%w : memref<8x4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    }
    %sy = memref.subview %y[%b, 0, 0] [1, 8, 4] [1, 1, 1] : memref<2x8x4xf32> to memref<8x4xf32, strided<[4, 1], offset: ?>>
    memref.copy %w, %sy : memref<8x4xf32> to memref<8x4xf32, strided<[4, 1], offset: ?>>
    memref.dealloc %u : memref<8x4xf32>
    memref.dealloc %w : memref<8x4xf32>
  }
  return
}

// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x100x4xf32>, %[[Y:[^:]+]]: memref<2x100x4xf32>, %[[N:[^:]+]]: index)
// CHECK: gpu.launch
// CHECK:   %[[COUNT:.+]] = arith.muli %[[N]], %{{.+}} : index
// CHECK:   scf.for %{{.+}} = %[[TID:.+]] to %[[COUNT]] step %{{.+}} {
// CHECK:     memref.load
// CHECK:     memref.store
// CHECK:   gpu.barrier
func.func @dynamic_rows(%x: memref<2x100x4xf32>, %y: memref<2x100x4xf32>, %n: index) {
  scf.forall (%b) in (2) {
    %sx = memref.subview %x[%b, 0, 0] [1, %n, 4] [1, 1, 1] : memref<2x100x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    %sy = memref.subview %y[%b, 0, 0] [1, %n, 4] [1, 1, 1] : memref<2x100x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    memref.copy %sx, %sy : memref<?x4xf32, strided<[4, 1], offset: ?>> to memref<?x4xf32, strided<[4, 1], offset: ?>>
  }
  return
}
