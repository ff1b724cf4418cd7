// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums --canonicalize --hla-gpu-lower-register-tiles | FileCheck %s --check-prefix=LOWER

// Tests hla-gpu-lower-register-tiles on KDA's derived backward with
// parallel gradients (bf16, c = d = dv = 64, 130 tokens): the reverse
// program's tiles in blocks ([4, 16, 64] rows, [4, 16, 16] bands, the
// [4, 16, 4, 16] pairs) are flattened on the copy the pass tries
// (PrepareTiles.h), the rows of Γ's cotangent become selects, fusion's
// two-result generics are split. All three passes place: the one saving the
// states, the λ pass, and the gradients' pass — with its token rows read
// from global memory where needed (landed, its buffers and copies would
// need 285,440 bytes), on one warpgroup (it reduces rows and columns), at
// 800 fragment registers per thread, which ptxas spills.
// CHECK: remark: register tiles: 20 contractions on wgmma
// CHECK: remark: register tiles: 24 contractions on wgmma, 61 fragments, {{.*}}, 2 warpgroup(s), 164 fragment registers per thread at most, 3 exact copies of fragments, 2 reductions by thread
// CHECK: remark: register tiles: 47 contractions on wgmma, 121 fragments, {{.*}} 227968 bytes of shared memory, 1 warpgroup(s), 800 fragment registers per thread at most, 7 exact copies of fragments, 12 reductions by thread, 2 reductions of rows, 11 of columns, 32 contractions reading A from registers

// In the gradients' pass, the cotangent of Γ's last row adds a row sum of
// the state's cotangent (a row vector) to column sums of token tiles
// (column vectors), converted through shared memory — a barrier, one
// thread of each row (lane % 4 = 0, warpgroup 0) writes its two rows, a
// barrier, every thread reads its columns; dβ, a column vector, goes to
// the output rows by the first four threads, each value where its token
// is inside the chunk.
// LOWER: gpu.launch
// LOWER: gpu.launch
// LOWER: gpu.launch
// LOWER: %[[VIEW:.+]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
// LOWER-NEXT: gpu.barrier
// LOWER: %[[QUAD:.+]] = arith.remui %{{.*}}, %{{.*}} : index
// LOWER: %[[FIRST:.+]] = arith.cmpi eq, %[[QUAD]], %{{.*}} : index
// LOWER: %[[WG0:.+]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// LOWER: %[[WRITER:.+]] = arith.andi %[[FIRST]], %[[WG0]] : i1
// LOWER-NEXT: scf.if %[[WRITER]] {
// LOWER-NEXT: memref.store %{{.*}}, %[[VIEW]][%{{.*}}] : memref<64xf32, #gpu.address_space<workgroup>>
// LOWER: memref.store %{{.*}}, %[[VIEW]][%{{.*}}] : memref<64xf32, #gpu.address_space<workgroup>>
// LOWER-NEXT: }
// LOWER-NEXT: gpu.barrier
// LOWER-COUNT-16: memref.load %[[VIEW]]
// LOWER: %[[STORER:.+]] = arith.cmpi ult, %arg{{[0-9]+}}, %c4{{(_[0-9]+)?}} : index
// LOWER-NEXT: scf.if %[[STORER]] {
// LOWER: %[[INSIDE:.+]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// LOWER-NEXT: scf.if %[[INSIDE]] {
// LOWER: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x130x2xbf16>
func.func @main(%q: tensor<1x130x2x64xbf16>, %k: tensor<1x130x2x64xbf16>, %v: tensor<1x130x2x64xbf16>, %g: tensor<1x130x2x64xbf16>, %beta: tensor<1x130x2xbf16>) -> tensor<1x130x2x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.125 : f64} : (tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2x64xbf16>, tensor<1x130x2xbf16>) -> tensor<1x130x2x64xbf16>
  return %o : tensor<1x130x2x64xbf16>
}
