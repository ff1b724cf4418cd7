// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/k.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// Tests the search's choice of hla-hoist-chunk-work for KDA (bf16, d = 64,
// default options, 132 SMs): with 64 (sequence, head) pairs, between a
// quarter and a half of the SMs, the register tiles take the state-free
// work in a kernel parallel over chunks ahead of the persistent one
// (which needs no value tiles). (With 128 pairs the fused loop is kept:
// kda-fused-search.mlir.)

// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles hoist-chunk-work=on {{.*}}schedule=persistent {{.*}}value-tile=0
// CHECK: remark: hla.chunking = ["kda: fused"]
func.func @pairs64(%q: tensor<4x128x16x64xbf16>, %k: tensor<4x128x16x64xbf16>, %v: tensor<4x128x16x64xbf16>, %g: tensor<4x128x16x64xbf16>, %beta: tensor<4x128x16xbf16>) -> tensor<4x128x16x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<4x128x16x64xbf16>, tensor<4x128x16x64xbf16>, tensor<4x128x16x64xbf16>, tensor<4x128x16x64xbf16>, tensor<4x128x16xbf16>) -> tensor<4x128x16x64xbf16>
  return %o : tensor<4x128x16x64xbf16>
}
