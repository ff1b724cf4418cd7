// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin -o %t/k.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// Tests the search's choice of hla-hoist-chunk-work for KDA (bf16, d = 64,
// default options, 132 SMs): with 128 (sequence, head) pairs the fused
// chunk loop keeps its state-free work (it ran faster than the hoisted
// form there: 3.01 against 3.27 ms at 8x16x8192 on an H100), one kernel.
// (kda-hoisted-search.mlir: 64 pairs.)

// CHECK: remark: hla.cuda_options = "{{.*}}generator=tiles hoist-chunk-work=off {{.*}}schedule=persistent
// CHECK: remark: hla.chunking = ["kda: fused"]
func.func @pairs128(%q: tensor<8x128x16x64xbf16>, %k: tensor<8x128x16x64xbf16>, %v: tensor<8x128x16x64xbf16>, %g: tensor<8x128x16x64xbf16>, %beta: tensor<8x128x16xbf16>) -> tensor<8x128x16x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta : (tensor<8x128x16x64xbf16>, tensor<8x128x16x64xbf16>, tensor<8x128x16x64xbf16>, tensor<8x128x16x64xbf16>, tensor<8x128x16xbf16>) -> tensor<8x128x16x64xbf16>
  return %o : tensor<8x128x16x64xbf16>
}
