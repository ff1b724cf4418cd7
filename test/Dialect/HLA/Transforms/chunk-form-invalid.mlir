// RUN: not hla-opt %s --hla-chunk=form=blocked 2>&1 | FileCheck %s

// Tests that an unknown chunked form is refused by the option's parser
// (the form is an enum, hla/Dialect/HLA/Modes.h).
// CHECK: for the --form option: Cannot find option named 'blocked'!
func.func @f() {
  return
}
