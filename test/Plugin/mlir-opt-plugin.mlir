// RUN: %preload_sanitizer mlir-opt %s --load-dialect-plugin=%hla_plugin --load-pass-plugin=%hla_plugin --pass-pipeline="builtin.module(hla-expand,hla-chunk{chunk-size=8 form=fused})" | FileCheck %s
// RUN: %preload_sanitizer mlir-opt %s --load-dialect-plugin=%hla_plugin | FileCheck %s --check-prefix=ROUNDTRIP

// Tests HLAPlugin.so in upstream mlir-opt: the dialect plugin makes hla ops
// parse and print, the pass plugin makes hla's passes runnable (through
// --pass-pipeline, the only way mlir-opt reaches plugin passes).

// CHECK-LABEL: func.func @main
// CHECK: scf.forall
// CHECK:   scf.for
// CHECK: hla.combine
// CHECK-NOT: hla.hla2
// CHECK-NOT: hla.scan

// ROUNDTRIP-LABEL: func.func @main
// ROUNDTRIP: hla.hla2

func.func @main(%q: tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32> {
  %o = hla.hla2 %q, %q, %q : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32>
  return %o : tensor<1x16x2x8xf32>
}
