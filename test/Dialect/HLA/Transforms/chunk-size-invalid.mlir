// RUN: not hla-opt %s --hla-chunk=chunk-size=0 2>&1 | FileCheck %s

// Tests that a chunk size below 1 is refused.
// CHECK: hla-chunk: chunk-size must be at least 1, got 0
func.func @f() {
  return
}
