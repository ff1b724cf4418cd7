// RUN: hla-opt %s --split-input-file --hla-gpu-map-chunk-loops=block-threads=32 --verify-diagnostics | FileCheck %s

// Tests what hla-gpu-map-chunk-loops does with the host code's own memory
// accesses: a read of a single value (a run-time check's operand) is staged
// through a host buffer by a device-to-host copy, which the host waits
// for; a whole-buffer copy is a device-to-device copy on the stream, which
// it does not wait for; a copy of a slice becomes a one-block kernel.

// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[A:[^:]+]]: memref<i32>, %[[B:[^:]+]]: memref<4x8xf32>, %[[C:[^:]+]]: memref<4x8xf32>, %[[D:[^:]+]]: memref<8x8xf32>)
// CHECK: %[[HOST:.+]] = memref.alloca() : memref<i32>
// CHECK: %[[T0:.+]] = gpu.wait async
// CHECK: %[[T1:.+]] = gpu.memcpy async [%[[T0]]] %[[HOST]], %[[A]] : memref<i32>, memref<i32>
// CHECK: gpu.wait [%[[T1]]]
// CHECK: %[[V:.+]] = memref.load %[[HOST]][] : memref<i32>
// CHECK: %[[T2:.+]] = gpu.wait async
// CHECK: gpu.memcpy async [%[[T2]]] %[[C]], %[[B]] : memref<4x8xf32>, memref<4x8xf32>
// CHECK-NOT: gpu.wait [
// CHECK: %[[S:.+]] = memref.subview %[[D]][4, 0] [4, 8] [1, 1]
// CHECK: gpu.launch
// CHECK: return %[[V]]
func.func @host(%a: memref<i32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>, %d: memref<8x8xf32>) -> i32 {
  %v = memref.load %a[] : memref<i32>
  memref.copy %b, %c : memref<4x8xf32> to memref<4x8xf32>
  %s = memref.subview %d[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %s, %c : memref<4x8xf32, strided<[8, 1], offset: 32>> to memref<4x8xf32>
  return %v : i32
}

// -----

// Tests that a read of one element of a larger buffer by the host is
// refused with the reason.
func.func @indexed(%b: memref<4x8xf32>, %i: index) -> f32 {
  // expected-error @+1 {{hla-gpu-map-chunk-loops: this op would run on the host over device memory}}
  %v = memref.load %b[%i, %i] : memref<4x8xf32>
  return %v : f32
}
