// RUN: hla-opt %s --hla-gpu-map-chunk-loops=block-threads=64 --canonicalize --cse | FileCheck %s

// Tests that a sum of every element of a tile into a 0-d f32 buffer
// (out += Σ f(x), as causal isolation's Σ x · 0 over the token tiles) is
// shared out over the block: each thread sums a strided share of the 8 x 4
// elements, the warp combines its lanes by butterfly shuffles (offsets 16
// to 1), and lane 0 of each warp adds the warp's sum to the output with an
// atomic add — no thread walks all 32 elements alone.

#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>

// CHECK-LABEL: func.func @full_sum
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.0{{0*}}e+00 : f32
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: gpu.launch blocks({{.*}}) threads(%[[TID:[^,]+]], {{.*}})
// CHECK:   %[[OUT:.+]] = memref.view {{.*}} to memref<f32, #gpu.address_space<workgroup>>
// CHECK:   gpu.barrier
// CHECK:   %[[SHARE:.+]] = scf.for %[[I:.+]] = %[[TID]] to %[[C32]] step %[[C64]] iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (f32) {
// CHECK:     %[[X:.+]] = memref.load
// CHECK:     %[[T:.+]] = arith.mulf %[[X]], %{{.+}} : f32
// CHECK:     %[[NEXT:.+]] = arith.addf %[[ACC]], %[[T]] : f32
// CHECK:     scf.yield %[[NEXT]] : f32
// CHECK:   %[[S16:.+]] = nvvm.shfl.sync bfly %{{.+}}, %[[SHARE]], %{{.+}}, %{{.+}} : f32 -> f32
// CHECK:   %[[A16:.+]] = arith.addf %[[SHARE]], %[[S16]]
// CHECK-COUNT-4: nvvm.shfl.sync bfly
// CHECK:   %[[LANE:.+]] = arith.remui %[[TID]], %[[C32]]
// CHECK:   %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %{{.+}}
// CHECK:   scf.if %[[FIRST]] {
// CHECK:     memref.atomic_rmw addf %{{.+}}, %[[OUT]][] : (f32, memref<f32, #gpu.address_space<workgroup>>) -> f32
// CHECK:   }
// CHECK:   gpu.barrier
func.func @full_sum(%x: memref<2x8x4xf32>, %y: memref<2xf32>) {
  scf.forall (%b) in (2) {
    %t = memref.alloc() : memref<8x4xf32>
    %sx = memref.subview %x[%b, 0, 0] [1, 8, 4] [1, 1, 1] : memref<2x8x4xf32> to memref<8x4xf32, strided<[4, 1], offset: ?>>
    memref.copy %sx, %t : memref<8x4xf32, strided<[4, 1], offset: ?>> to memref<8x4xf32>
    %s = memref.alloc() : memref<f32>
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%s : memref<f32>)
    linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction", "reduction"]} ins(%t : memref<8x4xf32>) outs(%s : memref<f32>) {
    ^bb0(%a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %m = arith.mulf %a, %z : f32
      %r = arith.addf %o, %m : f32
      linalg.yield %r : f32
    }
    %v = memref.load %s[] : memref<f32>
    memref.store %v, %y[%b] : memref<2xf32>
    memref.dealloc %t : memref<8x4xf32>
    memref.dealloc %s : memref<f32>
  }
  return
}
