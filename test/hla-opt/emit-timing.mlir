// RUN: hla-opt %s --emit=obj -o %t.o --mlir-timing 2>&1 | FileCheck %s

// Tests that --mlir-timing times an artefact compile phase by phase, the
// pipeline's passes one by one, and LLVM's share (where large graphs spend
// most of their compile time).

// CHECK: Execution time report
// CHECK-DAG: hla-cpu-pipeline
// CHECK-DAG: HLAChunkPass
// CHECK-DAG: translation to LLVM IR
// CHECK-DAG: LLVM -O3
// CHECK-DAG: LLVM code generation
// CHECK-DAG: Total

func.func @main(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %o = hla.hla2 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}
