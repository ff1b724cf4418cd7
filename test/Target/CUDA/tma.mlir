// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --cuda-generator=phases --chunk-size=32 --cuda-schedule=persistent --value-tile=0 --emit=ptx -o %t/k.ptx
// RUN: FileCheck %s < %t/k.ptx
// RUN: %cuda_toolkit/bin/ptxas -arch=sm_90a %t/k.ptx -o %t/k.o
// RUN: hla-opt %s --hla-target=cuda --cuda-generator=phases --chunk-size=32 --cuda-schedule=persistent --value-tile=0 --emit=llvm -o %t/host.ll
// RUN: FileCheck %s --check-prefix=HOST < %t/host.ll
// RUN: hla-opt %s --hla-cuda-pipeline="generator=phases schedule=persistent chunk-size=32 value-tile=0 tma=off" | FileCheck %s --check-prefix=OFF
// RUN: hla-opt %s --hla-target=cuda --cuda-generator=phases --chunk-size=64 --cuda-schedule=persistent --value-tile=0 --emit=ptx -o %t/c64.ptx
// RUN: FileCheck %s --check-prefix=C64 < %t/c64.ptx

// Tests that on sm_90a the phase mapper's chunk loop (--cuda-generator=
// phases) loads its q, k and v tiles with TMA,
// double buffered: the host asks the runtime for a tensor map of each
// [B, T, H, D] input with a [1, C, 1, D] box (0 when TMA cannot address it:
// the kernel then copies with its threads); the kernel initialises two
// mbarriers per load (one per buffer); before the chunk loop thread 0
// starts the first chunk's loads (expecting the box's bytes on the
// mbarrier: 32 x 64 bf16 = 4096), and in each iteration, after a barrier,
// it starts the next chunk's load into the other buffer while every thread
// waits for the current buffer's mbarrier phase. tma=off keeps the
// threads' copies only. With 64-token chunks the block's buffers need
// device-memory scratch, and hla-opt rebuilds the kernel without the second
// buffers: one load per tile and chunk, issued in the loop.

// CHECK-LABEL: .visible .entry main_kernel(
// CHECK-COUNT-6: mbarrier.init.shared.b64
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: fence.proxy.async.shared::cta;
// CHECK: mbarrier.arrive.expect_tx.shared.b64 {{.*}}, [[BAR:\[%rd[0-9]+\]]], {{%r[0-9]+}};
// CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}}], [[BAR]];
// CHECK-COUNT-2: cp.async.bulk.tensor.4d
// CHECK: bar.sync
// CHECK: cp.async.bulk.tensor.4d
// CHECK: mbarrier.try_wait.parity.shared.b64

// C64-LABEL: .visible .entry main_kernel(
// C64-COUNT-3: cp.async.bulk.tensor.4d
// C64-NOT: cp.async.bulk.tensor.4d

// HOST-LABEL: define internal void @__hla_call_main(
// HOST-COUNT-3: call i64 @hla_cuda_tensor_map(i64 {{%[0-9]+}}, i32 2, i64 1, i64 100, i64 2, i64 64, i64 1, i64 32, i64 1, i64 64)
// HOST: call void @mgpuLaunchKernel

// OFF-NOT: cp.async.bulk.tensor
// OFF: mma
// OFF-NOT: cp.async.bulk.tensor
func.func @main(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
