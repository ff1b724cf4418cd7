// RUN: hla-opt %s --split-input-file --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients=true" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=warpgroups=1" | FileCheck %s
// RUN: hla-opt %s --split-input-file --hla-derive-vjp --hla-expand "--hla-chunk=chunk-size=64 form=fused parallel-gradients=true" --convert-hla-to-linalg --convert-elementwise-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=warpgroups=2" | FileCheck %s --check-prefix=TAIL

// Tests how hla-gpu-lower-register-tiles copies a tile it reads from
// global memory into shared memory: each thread issues the 16-byte row
// loads of its row groups (up to four) before it converts and stores any,
// so that their latencies overlap. In the gradient pass of linear
// attention's backward (one warpgroup), the saved state of the chunk
// ([1, 2, 256, 64] f32) is 64 x 64: 512 groups of 8, four per thread,
// loaded one after the other, then stored.

// CHECK-LABEL: func.func @main
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c8{{.*}}) threads
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1x2x256x64xf32>, vector<8xf32>
// CHECK-NOT: vector.store
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1x2x256x64xf32>, vector<8xf32>
// CHECK-NOT: vector.store
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1x2x256x64xf32>, vector<8xf32>
// CHECK-NOT: vector.store
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1x2x256x64xf32>, vector<8xf32>
// CHECK-NOT: vector.load
// CHECK-COUNT-4: vector.store %{{.*}} {alignment = 16 : i64} : memref<4160xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
func.func @main(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}

// -----

// Where the groups do not divide among the threads (d = 16: the chunk's
// saved 16 x 16 state is 32 groups of 8, for two warpgroups' 256 threads),
// the threads past the last group load the last group again (arith.minui)
// and store nothing (the store is guarded). (This pass's token rows are
// copied into shared memory before its work instead:
// gpu-lower-register-tiles-vjp-parallel.mlir.)

// TAIL-LABEL: func.func @main(%{{.*}}: tensor<1x256x2x16xbf16>
// TAIL: gpu.launch
// TAIL: %[[REAL:.+]] = arith.cmpi ult, %[[UNIT:.+]], %c32{{.*}} : index
// TAIL: %[[LAST:.+]] = arith.minui %[[UNIT]], %c31 : index
// TAIL: arith.remui %[[LAST]], %c16{{.*}} : index
// TAIL: vector.load %{{.*}} : memref<1x2x64x16xf32>, vector<8xf32>
// TAIL: scf.if %[[REAL]] {
// TAIL: vector.store %{{.*}} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
func.func @main(%q: tensor<1x256x2x16xbf16>, %k: tensor<1x256x2x16xbf16>, %v: tensor<1x256x2x16xbf16>) -> tensor<1x256x2x16xbf16> {
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x256x2x16xbf16>, tensor<1x256x2x16xbf16>, tensor<1x256x2x16xbf16>) -> tensor<1x256x2x16xbf16>
  return %o : tensor<1x256x2x16xbf16>
}
