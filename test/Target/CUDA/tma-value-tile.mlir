// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --chunk-size=32 --cuda-schedule=persistent --value-tile=32 --emit=llvm -o %t/host.ll
// RUN: FileCheck %s --check-prefix=HOST < %t/host.ll
// RUN: hla-opt %s --hla-target=cuda --chunk-size=32 --cuda-schedule=persistent --value-tile=32 --emit=ptx -o %t/k.ptx
// RUN: FileCheck %s < %t/k.ptx
// RUN: %cuda_toolkit/bin/ptxas -arch=sm_90a %t/k.ptx -o %t/k.o

// Tests TMA loads of value tiles: with dv = 64 cut into tiles of 32 columns,
// v's tensor map has a [1, 32, 1, 32] box (q's and k's keep whole rows,
// [1, 32, 1, 64]), and each thread block loads its own columns: the box's
// innermost coordinate is the tile's first column (32 x block index z ...),
// not 0. Every tile still comes by TMA, double buffered (6 mbarriers).

// HOST-LABEL: define internal void @__hla_call_main(
// HOST-DAG: call i64 @hla_cuda_tensor_map(i64 {{%[0-9]+}}, i32 2, i64 1, i64 100, i64 2, i64 64, i64 1, i64 32, i64 1, i64 64)
// HOST-DAG: call i64 @hla_cuda_tensor_map(i64 {{%[0-9]+}}, i32 2, i64 1, i64 100, i64 2, i64 64, i64 1, i64 32, i64 1, i64 32)
// HOST: call void @mgpuLaunchKernel

// CHECK-LABEL: .visible .entry main_kernel(
// CHECK-COUNT-6: mbarrier.init.shared.b64
// CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {[[COL:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}]
func.func @main(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
