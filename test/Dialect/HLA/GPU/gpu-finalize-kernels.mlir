// RUN: hla-opt %s --pass-pipeline='builtin.module(gpu.module(hla-gpu-finalize-kernels))' | FileCheck %s

// Tests hla-gpu-finalize-kernels: the internal zero-sized shared array that
// gpu.dynamic_shared_memory lowers to becomes an external, 1024-aligned one
// (PTX `.extern .shared .align 1024 .b8 x[]`), other globals stay as they
// are, and kernels (not device functions) get nvvm.minctasm = 1.

module attributes {gpu.container_module} {
  // CHECK-LABEL: gpu.module @kernels
  gpu.module @kernels {
    // CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64, dso_local} : !llvm.array<0 x i8>
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64, dso_local} : !llvm.array<0 x i8>
    // CHECK: llvm.mlir.global internal @table() {addr_space = 3 : i32} : !llvm.array<4 x i8>
    llvm.mlir.global internal @table() {addr_space = 3 : i32} : !llvm.array<4 x i8>
    // CHECK: llvm.func @kernel() attributes {nvvm.kernel, nvvm.minctasm = 1 : i32}
    llvm.func @kernel() attributes {nvvm.kernel} {
      llvm.return
    }
    // CHECK: llvm.func @helper() {
    // CHECK-NOT: minctasm
    llvm.func @helper() {
      llvm.return
    }
  }
}
