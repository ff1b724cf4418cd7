// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=true value-tile=0" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles report" 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=true value-tile=0" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=report max-shared-memory=120000" 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=true value-tile=0" --convert-hla-to-linalg --hla-share-tile-products --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles max-shared-memory=120000" --verify-diagnostics -o /dev/null

// Tests the shared-memory layout of hla-gpu-lower-register-tiles on hla3
// with causal isolation (bf16, c = d = dv = 64): its 40 operand copies
// (8 KiB each) and the landing buffers would need some 380,000 bytes, more than
// a block's 232,448; copies alive at different times in the ordered body
// then share bytes, and the kernel needs 207,744. Where even that is too
// much (max-shared-memory=120000), the loop is not placed: a remark with
// generator=auto (it stays for the phase mapper), an error with tiles.

// CHECK: remark: register tiles: 36 contractions on wgmma, {{.*}} 28 shared-memory operand copies {{.*}}, 125312 bytes of shared memory
// CHECK: gpu.launch

// SMALL: remark: left to hla-gpu-map-chunk-loops: its tiles' shared-memory copies and buffers need 125312 bytes, more than the 120000 of a block
// SMALL: scf.forall

func.func @hla3(%q: tensor<1x128x2x64xbf16>, %k: tensor<1x128x2x64xbf16>, %v: tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16> {
  // expected-error @below {{hla-gpu-lower-register-tiles: cannot keep this loop's tiles in registers: its tiles' shared-memory copies and buffers need 125312 bytes, more than the 120000 of a block}}
  %o = hla.hla3 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>, tensor<1x128x2x64xbf16>) -> tensor<1x128x2x64xbf16>
  return %o : tensor<1x128x2x64xbf16>
}
