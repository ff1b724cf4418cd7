// RUN: not hla-opt %s --hla-lower-linsimp-exact=chunk-size=0 2>&1 | FileCheck %s

// Tests that a chunk size below 1 is refused.
// CHECK: hla-lower-linsimp-exact: chunk-size must be at least 1, got 0
func.func @f() {
  return
}
