// REQUIRES: cuda-toolkit
// RUN: not hla-opt %s --hla-target=cuda --chunk-size=64 --cuda-schedule=persistent --cuda-generator=phases --cuda-threads=1024 --emit=cubin -o %t.cubin 2>&1 | FileCheck %s
// RUN: hla-opt %s --hla-target=cuda --chunk-size=64 --cuda-schedule=persistent --cuda-generator=phases --cuda-threads=1024 --cuda-allow-spills --emit=cubin -o %t.kept.cubin 2>&1 | FileCheck %s --check-prefix=KEPT
// RUN: FileCheck %s --check-prefix=LOG < %t.kept.cubin.ptxas.log

// Tests that the CUDA build fails when a kernel spills registers: the
// shared-memory phases (register tiles fit hla3 and take no thread count)
// at 1024 threads per block leave ptxas 64 registers per thread, too few for a
// 64-token hla3 chunk loop at d = 128, even after hla-cuda-kernels' rebuild
// without TMA; the error names the module and carries ptxas's log. (At
// d = 64 it fits since its sums of products accumulate into one tile,
// hla-accumulate-tile-products.)

// With --cuda-allow-spills the spilling kernel is kept, as the options make
// it.
// KEPT-NOT: : error:
// KEPT: hla.cuda_options = "{{.*}}generator=phases{{.*}}tma=auto
// LOG: bytes spill stores
// CHECK: error: hla-cuda-kernels: registers spill in kernel module 'main_kernel' ({{[1-9][0-9]*}} bytes):
// CHECK: Compiling entry function 'main_kernel' for 'sm_90a'
// CHECK: bytes spill stores
func.func @main(%q: tensor<1x100x2x128xbf16>, %k: tensor<1x100x2x128xbf16>, %v: tensor<1x100x2x128xbf16>) -> tensor<1x100x2x128xbf16> {
  %o = hla.hla3 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x100x2x128xbf16>, tensor<1x100x2x128xbf16>, tensor<1x100x2x128xbf16>) -> tensor<1x100x2x128xbf16>
  return %o : tensor<1x100x2x128xbf16>
}
