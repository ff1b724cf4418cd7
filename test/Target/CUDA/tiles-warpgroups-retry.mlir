// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/k.cubin 2>&1 | FileCheck %s

// Tests the artefact's answer to ptxas spilling a register-tile kernel of
// one warpgroup: AHLA at d = 64 with a decay and causal isolation, 32 value
// columns per block (the auto value tile for 64 sequence-head pairs),
// spills in one warpgroup; the kernel is rebuilt with two warpgroups at the
// same value tiles (each holding half of every fragment's columns) before
// narrower value tiles are tried.

// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles{{.*}}value-tile=-1 warpgroups=2"
// CHECK: remark: hla.chunking = ["ahla: fused, 2 value tiles of 32 columns"]
func.func @main(%q: tensor<1x128x64x64xbf16>) -> tensor<1x128x64x64xbf16> {
  %o = hla.ahla %q, %q, %q {decay = 0.9 : f64} : (tensor<1x128x64x64xbf16>, tensor<1x128x64x64xbf16>, tensor<1x128x64x64xbf16>) -> tensor<1x128x64x64xbf16>
  return %o : tensor<1x128x64x64xbf16>
}
