// RUN: not hla-opt %s --hla-chunk=form=blocked 2>&1 | FileCheck %s

// Tests that an unknown chunked form is refused.
// CHECK: hla-chunk: form must be phased, fused or segmented, got 'blocked'
func.func @f() {
  return
}
