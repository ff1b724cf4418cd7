// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false anchor-rows=64 stable-features=true" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report" 2>&1 | FileCheck %s

// Tests register tiles on LinSimp after hla-hoist-chunk-work moved its
// rows into a pass parallel over (head, chunk) (d = dv = m = 64, W = 16,
// one anchor offset per pass). The loop keeping M and a: a is a column
// vector (each column's sum of the keys' features: shuffles across the
// eight threads of a column in a warp, then the four warps through shared
// memory), carried as 16 values a thread, stored per chunk into its stack
// by the first four threads. The rows' pass: its anchor window a loop
// carrying the numerator fragment (32 values a thread) and two row
// vectors (the denominator and the running maximum of each row, two values
// a thread: rows r and r + 8 of the one 64-row block); the rows' sums and
// maxima combine the four threads of a row by shuffles. The chunk's a,
// read along the features' columns, is read into registers before the
// window. Each of the window's products (x·Ωᵀ, F·S, F·Kᵀ, P·V) reads its A
// from the fragment's registers (wgmma with A in registers, inline PTX);
// their B operands (Ω, the state, the keys' features, v) are copied before
// the window, so the window writes no shared memory: one barrier before
// it, none inside.

// CHECK: remark: register tiles: 2 contractions on wgmma, {{.*}} 1 warpgroup(s), {{.*}} 1 reductions of rows, 1 of columns
// CHECK: remark: register tiles: 5 contractions on wgmma, {{.*}} 1 warpgroup(s), {{.*}} 5 reductions of rows, 0 of columns, 5 contractions reading A from registers
// CHECK-LABEL: func.func @rows
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c128{{[_0-9]*}},
// CHECK: scf.for %{{.+}} = %{{.+}} to %c2{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : memref<1x2x2x64xf32>
// CHECK: gpu.shuffle  xor %{{.+}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c16_i32
// CHECK: memref.view {{.*}} to memref<256xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %c128{{[_0-9]*}},
// The chunk's a (16 columns a thread) read once, before the window.
// CHECK-COUNT-16: memref.load %{{.+}} : memref<1x2x2x64xf32>
// CHECK-NOT: memref<1x2x2x64xf32>
// CHECK: gpu.barrier
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %c16{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-NOT: gpu.barrier
// CHECK-NOT: nvvm.stmatrix
// CHECK-COUNT-4: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1,
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32
// CHECK: arith.maximumf
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-12: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1,
// CHECK-NOT: gpu.barrier
// CHECK-NOT: nvvm.stmatrix
// CHECK: scf.yield
func.func @rows(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %r: tensor<1x100x2x64xbf16>, %u: tensor<1x100x2x64xbf16>, %om: tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
