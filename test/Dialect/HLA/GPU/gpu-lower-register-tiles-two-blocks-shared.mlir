// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=true value-tile=32" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report warpgroups=1" -o /dev/null 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=true value-tile=32" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --hla-accumulate-tile-products --hla-split-tile-sums --canonicalize "--hla-gpu-lower-register-tiles=report warpgroups=1 max-shared-memory=2000000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ROOMY

// Tests that a block of one warpgroup whose copies, each in bytes of its
// own, need more than half an SM's shared memory (the H200's 227 KiB: at
// most 115,712 bytes a block for two blocks an SM, each reserving 1 KiB)
// shares bytes between copies never alive together where that brings it
// within the half. hla2 with causal isolation at 32 value columns, one
// warpgroup (its products' A read from registers): 117,248 bytes in bytes
// of their own (what it takes where a block may have far more: nothing
// shared), 96,384 shared.

// CHECK: remark: register tiles: {{.*}} 96384 bytes of shared memory, 1 warpgroup(s)
// ROOMY: remark: register tiles: {{.*}} 117248 bytes of shared memory, 1 warpgroup(s)
func.func @hla2(%q: tensor<1x256x2x64xbf16>, %k: tensor<1x256x2x64xbf16>, %v: tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>, tensor<1x256x2x64xbf16>) -> tensor<1x256x2x64xbf16>
  return %o : tensor<1x256x2x64xbf16>
}
