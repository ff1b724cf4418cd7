// RUN: not hla-opt %s --emit=exe --entry=missing -o %t 2>&1 | FileCheck %s
// RUN: not hla-opt %s --emit=exe --entry=missing -o %t --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=ASKED

// Tests that a failing compile says what failed without printing the
// module (which runs to megabytes for a model graph), and prints it when
// asked the upstream way.

// CHECK: error: hla-emit-entry-abi: entry function 'missing' is not a public function
// CHECK-NOT: see current operation
// CHECK-NOT: func.func

// ASKED: error: hla-emit-entry-abi: entry function 'missing'
// ASKED: IR Dump After HLAEmitEntryABIPass Failed
// ASKED: llvm.func @main

func.func @main(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %o = hla.hla2 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}
