// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cpu --emit=shared --summary-entries -o %t/k.so
// RUN: llvm-nm -D --defined-only %t/k.so | FileCheck %s
// RUN: not hla-opt %s --hla-target=cpu --emit=shared --summary-entries --vjp -o %t/v.so 2>&1 | FileCheck %s --check-prefix=VJP

// Tests that --summary-entries exports the entry's summary and combine from
// the shared library beside the entry itself, each with its signature, and
// that it is refused together with --vjp.

// CHECK-DAG: T hla_main{{$}}
// CHECK-DAG: T hla_main_combine{{$}}
// CHECK-DAG: R hla_main_combine_signature{{$}}
// CHECK-DAG: T hla_main_summary{{$}}
// CHECK-DAG: R hla_main_summary_signature{{$}}
// VJP: --summary-entries and --vjp cannot be combined
func.func @main(%q: tensor<1x40x2x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x4xf32>) -> tensor<1x40x2x4xf32> {
  %o = hla.hla3 %q, %k, %v : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>) -> tensor<1x40x2x4xf32>
  return %o : tensor<1x40x2x4xf32>
}
