// RUN: hla-opt %s --hla-expand "--hla-chunk=chunk-size=64 form=fused causal-isolation=false value-tile=0" --convert-hla-to-linalg --hla-fuse-tile-elementwise --canonicalize "--hla-gpu-lower-register-tiles=generator=tiles" | FileCheck %s

// Tests how hla-gpu-lower-register-tiles copies token rows whose tensor
// may start off a 16-byte boundary (a view of a larger buffer): cp.async
// moves 16 aligned bytes, so at the kernel's start each input's aligned
// pointer is tested (address % 16 == 0) and every copy of eight elements
// branches on it: cp.async when aligned, else eight element loads (zero
// past the chunk's end) stored to the landing buffer as one 16-byte store.

// CHECK-LABEL: func.func @linear
// CHECK: gpu.launch
// CHECK: %[[ADDRESS:.+]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<1x100x2x64xbf16> -> index
// CHECK: %[[REM:.+]] = arith.remui %[[ADDRESS]], %{{.*}} : index
// CHECK: %[[ALIGNED:.+]] = arith.cmpi eq, %[[REM]], %{{.*}} : index
// CHECK: scf.for
// CHECK: scf.if %[[ALIGNED]] {
// CHECK-NEXT: nvgpu.device_async_copy
// CHECK-NEXT: } else {
// CHECK-COUNT-8: memref.load %{{.*}} : memref<1x100x2x64xbf16>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<8320xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK-NEXT: }
func.func @linear(%q: tensor<1x100x2x64xbf16>, %k: tensor<1x100x2x64xbf16>, %v: tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16> {
  %o = hla.linear_attention %q, %k, %v : (tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>, tensor<1x100x2x64xbf16>) -> tensor<1x100x2x64xbf16>
  return %o : tensor<1x100x2x64xbf16>
}
