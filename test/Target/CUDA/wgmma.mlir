// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --cuda-generator=phases --chunk-size=64 --cuda-schedule=persistent --emit=ptx -o %t/k.ptx
// RUN: FileCheck %s < %t/k.ptx
// RUN: hla-opt %s --hla-target=cuda --cuda-generator=phases --chunk-size=64 --cuda-schedule=persistent --emit=cubin -o %t/k.cubin
// RUN: FileCheck %s --check-prefix=LOG < %t/k.cubin.ptxas.log
// RUN: hla-opt %s --hla-target=cuda --cuda-generator=phases --chunk-size=64 --cuda-schedule=persistent --cuda-mma=mma.sync --emit=ptx -o %t/sync.ptx
// RUN: FileCheck %s --check-prefix=SYNC < %t/sync.ptx

// Tests that on sm_90a (the default chip) the shared-memory phase mapper
// (--cuda-generator=phases; by default hla2 now runs on register tiles,
// tested in gpu-lower-register-tiles-hla2.mlir) puts the chunk
// contractions of a bf16 hla2 with 64-row tiles on warpgroup MMA: operands staged as bf16 core
// matrices, made visible to the async proxy, then wgmma m64nNk16 (f32
// accumulators) committed and waited for, with shared-memory descriptors
// built in inline PTX (leading byte offset 64 x 16 = 1024 bytes for
// 64-row tiles, stride 128 bytes); ptxas accepts it without spills or
// serialized wgmma (hla-opt fails on those), and --cuda-mma=mma.sync keeps
// the pre-Hopper instruction.

// CHECK-LABEL: .visible .entry main_kernel(
// CHECK: fence.proxy.async.shared::cta;
// CHECK: bar.sync
// CHECK: or.b64 {{%rd[0-9]+}}, t, 34363932672;
// CHECK: wgmma.fence.sync.aligned;
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned 0;

// LOG: Compiling entry function 'main_kernel' for 'sm_90a'
// LOG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// SYNC-LABEL: .visible .entry main_kernel(
// SYNC-NOT: wgmma
// SYNC: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SYNC-NOT: wgmma
func.func @main(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
