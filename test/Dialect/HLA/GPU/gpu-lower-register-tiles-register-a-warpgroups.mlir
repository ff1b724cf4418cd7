// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles warpgroups=1 report" 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles warpgroups=2 report" 2>&1 | FileCheck %s --check-prefix=TWO

// Tests that a contraction reads its A operand from a fragment's registers
// only in a block of one warpgroup: with two, each warpgroup holds half of
// every fragment's columns, while wgmma's register A of a K slice needs all
// of that slice's 64 rows in the warpgroup issuing it. Linear attention's
// P·V (P = mask(QKᵀ), a fragment indexed (rows, keys)) reads P from
// registers in one warpgroup, and from P's copy (stmatrix) in two.

// ONE: remark: register tiles: 4 contractions on wgmma, {{.*}} 1 shared-memory operand copies (1 conversions from fragments; {{.*}}, 1 warpgroup(s), {{.*}}, 1 contractions reading A from registers
// ONE-LABEL: func.func @linear
// ONE: nvvm.wgmma.wait.group.sync.aligned 0
// ONE-NOT: nvvm.stmatrix
// ONE: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;

// TWO: remark: register tiles: 4 contractions on wgmma, {{.*}} 2 shared-memory operand copies (2 conversions from fragments; {{.*}}, 2 warpgroup(s), {{.*}} per thread at most
// TWO-NOT: reading A from registers
// TWO-LABEL: func.func @linear
// TWO: nvvm.wgmma.wait.group.sync.aligned 0
// TWO: nvvm.stmatrix
// TWO: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 32, k = 16>
// TWO-NOT: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async
func.func @linear(%q: tensor<1x128x2x64xbf16>, %k: tensor<1x128x2x64xbf16>, %v: tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16>
  return %o : tensor<1x128x2x64xbf16>
}
