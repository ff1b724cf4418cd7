// RUN: hla-opt --help | FileCheck %s

// Tests that hla-opt registers hla's passes (and the generic clean-ups its
// pipelines use) so that `--help` lists them.

// CHECK: Passes:
// CHECK-DAG: --canonicalize
// CHECK-DAG: --cse
// CHECK-DAG: --hla-expand
// CHECK-DAG: Rewrite attention ops into prefix-moment algebra ops
