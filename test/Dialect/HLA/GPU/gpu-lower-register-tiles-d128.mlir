// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" --verify-diagnostics | FileCheck %s

// Tests hla-gpu-lower-register-tiles on linear attention at d = 128 (bf16,
// c = dv = 64): the state S = Σ kᵀv has 128 rows, a fragment of two 64-row
// wgmma blocks (64 registers per thread, carried by the chunk loop). Its
// update Kᵀ·V runs as two chains of four wgmma m64n64k16, A's second block
// 64 rows further into k's landing buffer: k is read MN-major (K along the
// token rows), its core matrices of 8 d columns 64 x 16 + 16 = 1040 bytes
// apart, so the second block starts 8 x 1040 = 8320 bytes in; the steps
// along K (16 tokens) are 256 bytes. q·S reads S's copy (a conversion)
// MN-major over its 128 rows: eight wgmma. The masked scores P are A of
// P·V straight from their registers (no copy): four wgmma with A in
// registers.

// CHECK-LABEL: func.func @linear
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}}) threads({{.*}}) in ({{[^ ]+}} = %c128
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-8: nvvm.stmatrix
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}}A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-4: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// The update: block 0, then block 1.
// CHECK: add.s64 t, $1, 0;
// CHECK: nvvm.wgmma.mma_async {{.*}}A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: add.s64 t, $1, 256;
// CHECK: add.s64 t, $1, 512;
// CHECK: add.s64 t, $1, 768;
// CHECK: add.s64 t, $1, 8320;
// CHECK: nvvm.wgmma.mma_async {{.*}}A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: add.s64 t, $1, 8576;
// CHECK: add.s64 t, $1, 8832;
// CHECK: add.s64 t, $1, 9088;
// CHECK: nvvm.wgmma.mma_async {{.*}}A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: scf.yield
func.func @linear(%q: tensor<1x128x2x128xbf16>, %k: tensor<1x128x2x128xbf16>, %v: tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16> {
  // expected-remark @below {{register tiles: 4 contractions on wgmma, 10 fragments, 14 on-demand tiles, 1 shared-memory operand copies (1 conversions from fragments; 3 operands read from landing buffers), 99712 bytes of shared memory, 1 warpgroup(s), 128 fragment registers per thread at most, 1 contractions reading A from registers}}
  %o = hla.linear_attention %q, %k, %v : (tensor<1x128x2x128xbf16>, tensor<1x128x2x128xbf16>, tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16>
  return %o : tensor<1x128x2x64xbf16>
}
