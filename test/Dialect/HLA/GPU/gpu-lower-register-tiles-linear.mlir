// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" --verify-diagnostics | FileCheck %s

// Tests hla-gpu-lower-register-tiles on linear attention (bf16, c = d = dv =
// 64, four chunks): one warpgroup per (sequence, head) runs the four
// contractions per chunk as wgmma m64n64k16 (4 instructions each); the state
// S is 32 fp32 registers per thread carried by the chunk loop; the mask
// runs on QKᵀ's fragment. The q, k and v rows are copied a chunk ahead
// (cp.async into two buffers each, rows past the end zero-filled, laid out
// as wgmma operands: 8-column groups 64 x 16 + 16 bytes apart): the first
// chunk's before the loop, the next one's right after the barrier that
// opens each chunk; wgmma reads q, k and v from there, K-major or, with K
// along the token rows (Kᵀ·V, P·V), MN-major (the transpose bit). Shared
// memory gets two copies: S by stmatrix (the conversion, for Q·S, read
// MN-major; four 8 x 8 blocks per instruction) and the decayed k rows.
// P = mask(QKᵀ) is P·V's A straight from its registers (bf16 pairs of its
// fragment, four registers a wgmma), with no copy. Each chunk has two
// barriers: that one (its rows landed, the other buffers free) and after
// the S and k copies. A product from zero starts its chain with scale-d
// off (D not read), so no accumulator register is written between the
// wgmma fence and the chain.

// CHECK-LABEL: func.func @linear
// CHECK-NOT: scf.forall
// CHECK: bufferization.to_buffer %{{.*}} read_only
// CHECK: %[[BUFFER:.+]] = memref.alloc() : memref<1x256x2x64xbf16>
// CHECK: %[[OUT:.+]] = bufferization.to_tensor %[[BUFFER]] restrict writable
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c128
// CHECK: gpu.dynamic_shared_memory
// CHECK-COUNT-3: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1} : memref<1x256x2x64xbf16> to memref<8320xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK-COUNT-3: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>, i32, i32, i32, i32
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<8320xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: vector.store {{.*}} : memref<4160xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: llvm.insertvalue
// CHECK: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.stmatrix
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// CHECK-COUNT-3: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// CHECK: scf.if
// CHECK: vector.store {{.*}} : memref<1x256x2x64xbf16>, vector<2xbf16>
// CHECK: nvvm.wgmma.mma_async {{.*}}D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}}D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
// CHECK: return %[[OUT]]
func.func @linear(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  // expected-remark @below {{register tiles: 4 contractions on wgmma, 10 fragments, 15 on-demand tiles, 2 shared-memory operand copies (1 conversions from fragments; 3 operands read from landing buffers), 66560 bytes of shared memory, 1 warpgroup(s), 96 fragment registers per thread at most, 1 contractions reading A from registers}}
  %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
