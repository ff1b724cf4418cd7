// RUN: hla-opt %s --hla-gpu-map-chunk-loops --canonicalize --cse | FileCheck %s

// Tests that a tensor-core contraction C += A·B whose C only feeds an
// elementwise op (here C ⊙ mask, as in the chunked forms' masked Gram
// matrices) evaluates that op on its accumulator fragments: each result
// element is multiplied by the mask element at its position and stored in
// the elementwise op's output, with no pass of its own over C. C, which
// started from its old values (no zero fill before), is loaded into the
// accumulators.

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @masked_product
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK:   %[[OLD:.+]] = memref.load %[[C:.+]][%{{.+}}, %{{.+}}] : memref<16x8xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[MMA:.+]] = nvvm.mma.sync A[{{.+}}]  B[{{.+}}]  C[%[[OLD]], {{.+}}]
// CHECK:   %[[R:.+]] = llvm.extractvalue %[[MMA]][0]
// CHECK:   %[[M:.+]] = memref.load %[[MASK:.+]][%{{.+}}, %{{.+}}] : memref<16x8xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[P:.+]] = arith.mulf %[[R]], %[[M]] : f32
// CHECK:   memref.store %[[P]], %[[OUT:.+]][%{{.+}}, %{{.+}}] : memref<16x8xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.store %{{.+}}, %[[C]]
// CHECK: gpu.barrier
func.func @masked_product(%x: memref<2x16x16xbf16>, %y: memref<2x16x8xbf16>, %z: memref<2x16x8xf32>) {
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
    %mask = memref.alloc() : memref<16x8xf32>
    %c = memref.alloc() : memref<16x8xf32>
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%sy : memref<16x8xbf16, strided<[8, 1], offset: ?>>) outs(%b, %mask, %c : memref<16x8xf32>, memref<16x8xf32>, memref<16x8xf32>) {
    ^bb0(%v: bf16, %o: f32, %o2: f32, %o3: f32):
      %e = arith.extf %v : bf16 to f32
      %m = arith.mulf %e, %e : f32
      linalg.yield %e, %m, %m : f32, f32, f32
    }
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<16x16xf32>, memref<16x8xf32>) outs(%c : memref<16x8xf32>) {
    ^bb0(%l: f32, %r: f32, %acc: f32):
      %p = arith.mulf %l, %r : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
    %out = memref.alloc() : memref<16x8xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %mask : memref<16x8xf32>, memref<16x8xf32>) outs(%out : memref<16x8xf32>) {
    ^bb0(%v: f32, %m: f32, %o: f32):
      %p = arith.mulf %v, %m : f32
      linalg.yield %p : f32
    }
    %sz = memref.subview %z[%i, 0, 0] [1, 16, 8] [1, 1, 1] : memref<2x16x8xf32> to memref<16x8xf32, strided<[8, 1], offset: ?>>
    memref.copy %out, %sz : memref<16x8xf32> to memref<16x8xf32, strided<[8, 1], offset: ?>>
  }
  return
}
