// RUN: hla-opt %s "--pass-pipeline=builtin.module(gpu.module(hla-gpu-lower-async-copies{index-bitwidth=32}))" | FileCheck %s

// Tests that hla-gpu-lower-async-copies lowers an nvgpu async copy of 8
// bf16 (16 bytes, bypassing L1, zero-filling past `n` elements read) to
// cp.async.cg with 32-bit index arithmetic: the buffer descriptors then
// match those of convert-gpu-to-nvvm at index-bitwidth=32.

// CHECK-LABEL: gpu.func @copy
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : memref<4x64xbf16> to !llvm.struct<(ptr, ptr, i32, array<2 x i32>, array<2 x i32>)>
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = {{ *}}cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK-NOT: nvgpu.
gpu.module @kernels {
  gpu.func @copy(%src: memref<4x64xbf16>, %dst: memref<512xbf16, #gpu.address_space<workgroup>>, %row: index, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %t = nvgpu.device_async_copy %src[%row, %c0], %dst[%c0], 8, %n {bypassL1} : memref<4x64xbf16> to memref<512xbf16, #gpu.address_space<workgroup>>
    gpu.return
  }
}
