// RUN: hla-opt %s --hla-expand | FileCheck %s

// Tests that hla-expand handles dynamic batch and sequence sizes: the
// algebra ops carry the dynamic extents through.

// CHECK-LABEL: func.func @dynamic
// CHECK: hla.segment {{.*}} -> (tensor<?x?x2x4x4xf32>, tensor<?x?x2x4x4xf32>, tensor<?x?x2x4x4xf32>)
// CHECK: hla.scan {{.*}} -> (tensor<?x?x2x4x4xf32>, tensor<?x?x2x4x4xf32>, tensor<?x?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>)
// CHECK: hla.readout {{.*}} -> tensor<?x?x2x4xf32>
func.func @dynamic(%q: tensor<?x?x2x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>) {
  %o:4 = hla.hla2 %q, %q, %q : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>)
  return %o#0, %o#1, %o#2, %o#3 : tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>
}
