// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false anchor-rows=64 stable-features=true" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false anchor-rows=64 stable-features=true" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products "--hla-hoist-chunk-work=bf16-operands" --hla-split-tile-sums --canonicalize --hla-gpu-lower-register-tiles | FileCheck %s

// Tests that a tile computed from on-demand tiles, which one contraction
// takes as an operand and a fold of rows also reads, is a fragment:
// LinSimp's composite queries x = τ^½ (q ⊙ r) in the rows' pass (each
// anchor offset: the norms ‖x‖² fold x's rows; x·Ωᵀ takes it), and the
// keys k (their norms and k·Ωᵀ). Computed once into registers, x is read
// from them by the norms and, packed to bf16 pairs, by x·Ωᵀ as its A; on
// demand, the norms and the product would each compute x again.

// REPORT: remark: register tiles: 5 contractions on wgmma, 16 fragments, 31 on-demand tiles, 3 shared-memory operand copies (2 conversions from fragments; 2 operands read from landing buffers), {{.*}}, 5 contractions reading A from registers

// The window's loop (16 anchor offsets): the norms' shuffles, then the
// projection on wgmma with A in registers: no copy of x.
// CHECK-LABEL: func.func @rows
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: scf.for %{{.+}} = %{{.+}} to %c16{{.*}} iter_args
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32
// CHECK-NOT: nvvm.stmatrix
// CHECK-NOT: vector.store
// CHECK: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68,
func.func @rows(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>, %r: tensor<1x100x2x64xbf16>, %u: tensor<1x100x2x64xbf16>, %om: tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.linsimp %q, %k, %v, %r, %u, %om {window = 16 : i64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<64x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
