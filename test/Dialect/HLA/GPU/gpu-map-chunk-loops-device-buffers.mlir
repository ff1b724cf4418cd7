// RUN: hla-opt %s --hla-gpu-map-chunk-loops=block-threads=32 | FileCheck %s

// Tests that a buffer of the function body that one loop writes and the
// next reads (the segmented form's segment summaries) becomes a device
// allocation on the launches' stream, freed there after its last reader
// (stream order: the host does not wait for the free), and that both
// kernels may capture it.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @two_loops
// CHECK-SAME: (%[[X:[^:]+]]: memref<4x8xf32>, %[[Y:[^:]+]]: memref<4x8xf32>)
// CHECK: %[[READY:.+]] = gpu.wait async
// CHECK: %[[BUF:.+]], %{{.+}} = gpu.alloc async [%[[READY]]] () : memref<4x8xf32>
// CHECK-NOT: memref.alloc()
// CHECK: gpu.launch
// CHECK:   memref.subview %[[BUF]]
// CHECK: gpu.launch
// CHECK:   memref.subview %[[BUF]]
// CHECK: %[[AFTER:.+]] = gpu.wait async
// CHECK: gpu.dealloc async [%[[AFTER]]] %[[BUF]] : memref<4x8xf32>
// CHECK-NOT: gpu.wait [
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @two_loops(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  %tmp = memref.alloc() : memref<4x8xf32>
  scf.forall (%i) in (4) {
    %in = memref.subview %x[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    %out = memref.subview %tmp[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%in : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    }
  }
  scf.forall (%i) in (4) {
    %in = memref.subview %tmp[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    %out = memref.subview %y[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%in : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
    }
  }
  memref.dealloc %tmp : memref<4x8xf32>
  return
}
