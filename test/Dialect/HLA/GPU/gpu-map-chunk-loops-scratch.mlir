// RUN: hla-opt %s --hla-gpu-map-chunk-loops=block-threads=32 | FileCheck %s

// Tests that buffers which do not fit in shared memory (here a 256 KiB
// tile, more than the 227 KiB a block may use) go to each block's slice of
// a scratch buffer in device memory: allocated on the stream before the
// launch (2 blocks x 262144 bytes), viewed at block index x 262144 in the
// kernel, freed after it on the stream (the host does not wait); the
// block then needs no shared memory.

// CHECK-LABEL: func.func @too_big
// CHECK: %[[READY:.+]] = gpu.wait async
// CHECK: %[[SCRATCH:.+]], %{{.+}} = gpu.alloc async [%[[READY]]] () : memref<524288xi8>
// CHECK: gpu.launch blocks(%[[BX:[^,]+]], %{{[^,]+}}, %{{[^)]+}}) in {{.*}} dynamic_shared_memory_size
// CHECK:   %[[BASE:.+]] = arith.muli %[[BX]], %{{.+}} : index
// CHECK:   %[[AT:.+]] = arith.addi %[[BASE]], %{{.+}} : index
// CHECK:   memref.view %[[SCRATCH]][%[[AT]]][] : memref<524288xi8> to memref<256x256xf32>
// CHECK: %[[AFTER:.+]] = gpu.wait async
// CHECK: gpu.dealloc async [%[[AFTER]]] %[[SCRATCH]]
// CHECK-NOT: gpu.wait [
func.func @too_big(%x: memref<2x4xf32>) {
  scf.forall (%i) in (2) {
    %t = memref.alloc() : memref<256x256xf32>
    %c0 = arith.constant 0 : index
    %v = memref.load %t[%c0, %c0] : memref<256x256xf32>
    memref.store %v, %x[%i, %c0] : memref<2x4xf32>
    memref.dealloc %t : memref<256x256xf32>
  }
  return
}
