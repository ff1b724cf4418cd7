// RUN: hla-opt %s --hla-cpu-pipeline="chunk-size=16 entry=main" | FileCheck %s

// Tests the phase-boundary facts of hla-cpu-pipeline: the result is the
// LLVM dialect only, with OpenMP parallel regions for the chunk loops, the
// compiled function renamed and private, and the C ABI wrappers and
// signature strings exported. The module keeps hla-chunk's record of how it
// chunked each chain; no hla op is left.

// CHECK: module attributes {hla.chunking = ["hla2: phased"]}
// CHECK-NOT: hla.
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK-NOT: memref.
// CHECK: llvm.func internal @__hla_fn_main(
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK: llvm.func @hla_main(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr)
// CHECK: llvm.mlir.global external constant @hla_main_signature("main|f32:1x40x2x8,f32:1x40x2x8,f32:1x40x2x8|f32:1x40x2x8\00")
// CHECK: llvm.func @hla_entry(
func.func @main(%q: tensor<1x40x2x8xf32>, %k: tensor<1x40x2x8xf32>, %v: tensor<1x40x2x8xf32>) -> tensor<1x40x2x8xf32> {
  %o = hla.hla2 %q, %k, %v {decay = 0.9 : f64} : (tensor<1x40x2x8xf32>, tensor<1x40x2x8xf32>, tensor<1x40x2x8xf32>) -> tensor<1x40x2x8xf32>
  return %o : tensor<1x40x2x8xf32>
}
