// RUN: hla-opt %s --hla-add-summary-entries | FileCheck %s

// Tests that hla-add-summary-entries adds @main_summary (the arguments less
// the initial state; every component of the monoid's total, rho included
// though no state carries it), @main_combine (the carried components P, m
// through a later span's P, m, rho) and @main_combine_vjp (its transpose),
// and keeps @main as it was.

// CHECK: #[[$LA:.+]] = #hla.monoid<"linear_attention" {{.*}}state(P: [d, dv], m: [d], rho: [] eye)

// CHECK-LABEL: func.func @main(
// CHECK: hla.linear_attention

// CHECK-LABEL: func.func @main_summary
// CHECK-SAME: (%[[Q:.+]]: tensor<1x40x2x4xf32>, %[[K:.+]]: tensor<1x40x2x4xf32>, %[[V:.+]]: tensor<1x40x2x6xf32>)
// CHECK-SAME: -> (tensor<1x2x4x6xf32>, tensor<1x2x4xf32>, tensor<1x2xf32>)
// CHECK: %[[SEG:.+]]:3 = hla.segment #[[$LA]](%[[K]], %[[V]])
// CHECK: %[[TOT:.+]]:3 = hla.total #[[$LA]](%[[SEG]]#0, %[[SEG]]#1, %[[SEG]]#2)
// CHECK: return %[[TOT]]#0, %[[TOT]]#1, %[[TOT]]#2

// CHECK-LABEL: func.func @main_combine
// CHECK-SAME: (%[[P:[^:]+]]: tensor<1x2x4x6xf32>, %[[M:[^:]+]]: tensor<1x2x4xf32>, %[[TP:[^:]+]]: tensor<1x2x4x6xf32>, %[[TM:[^:]+]]: tensor<1x2x4xf32>, %[[TR:[^:]+]]: tensor<1x2xf32>)
// CHECK-SAME: -> (tensor<1x2x4x6xf32>, tensor<1x2x4xf32>)
// CHECK: %[[C:.+]]:3 = hla.combine #[[$LA]](%[[P]], %[[M]], %{{.+}}), (%[[TP]], %[[TM]], %[[TR]])
// CHECK: return %[[C]]#0, %[[C]]#1

// The transposed combine: (P, m; the total; λ of P, m) -> μ of P, m, an
// hla.combine under the derived backward's auxiliary monoid (9 components).
// CHECK-LABEL: func.func @main_combine_vjp
// CHECK-SAME: (%{{[^:]+}}: tensor<1x2x4x6xf32>, %{{[^:]+}}: tensor<1x2x4xf32>, %{{[^:]+}}: tensor<1x2x4x6xf32>, %{{[^:]+}}: tensor<1x2x4xf32>, %{{[^:]+}}: tensor<1x2xf32>, %{{[^:]+}}: tensor<1x2x4x6xf32>, %{{[^:]+}}: tensor<1x2x4xf32>)
// CHECK-SAME: -> (tensor<1x2x4x6xf32>, tensor<1x2x4xf32>)
// CHECK: %[[T:.+]]:9 = hla.combine #{{.+}}_transposed_combine
// CHECK: return %[[T]]#3, %[[T]]#4
func.func @main(%q: tensor<1x40x2x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x6xf32>, %p0: tensor<1x2x4x6xf32>, %m0: tensor<1x2x4xf32>) -> (tensor<1x40x2x6xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4xf32>) {
  %o, %p, %m = hla.linear_attention %q, %k, %v initial_state(%p0, %m0) {decay = 0.9 : f64, normalize = true} : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2x6xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4xf32>) -> (tensor<1x40x2x6xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4xf32>)
  return %o, %p, %m : tensor<1x40x2x6xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4xf32>
}
