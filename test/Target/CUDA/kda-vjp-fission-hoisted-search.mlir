// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --emit=cubin --vjp -o %t/k.cubin --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// Tests the search's form for KDA's derived backward (bf16, d = 64, default
// options): register tiles at 64-token chunks, the tokens' gradients in a
// pass parallel over chunks cut into stages of at most 96 KiB of live
// tiles (hla-fission-chunk-passes; kernels that spill a little are kept,
// as measured), with 16 (sequence, head) pairs, fewer than half of the SMs (132): the sequential passes' state-free work goes to passes parallel over chunks (hla-hoist-chunk-work).
// CHECK: remark: hla.cuda_options = "{{.*}}chunk-size=64 {{.*}}fission-live-bytes=98304 generator=auto hoist-chunk-work=on {{.*}}parallel-gradients=on {{.*}}schedule=persistent
// CHECK: remark: hla.chunking = ["kda backward: parallel gradients, the chunk's WY/UT form differentiated in reverse"]
func.func @main(%q: tensor<1x64x16x64xbf16>, %k: tensor<1x64x16x64xbf16>, %v: tensor<1x64x16x64xbf16>, %g: tensor<1x64x16x64xbf16>, %beta: tensor<1x64x16xbf16>) -> tensor<1x64x16x64xbf16> {
  %o = hla.kda %q, %k, %v, %g, %beta {scale = 0.125 : f64} : (tensor<1x64x16x64xbf16>, tensor<1x64x16x64xbf16>, tensor<1x64x16x64xbf16>, tensor<1x64x16x64xbf16>, tensor<1x64x16xbf16>) -> tensor<1x64x16x64xbf16>
  return %o : tensor<1x64x16x64xbf16>
}
