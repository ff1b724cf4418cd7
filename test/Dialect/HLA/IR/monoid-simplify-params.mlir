// RUN: hla-opt %s --test-hla-monoid | FileCheck %s

// Tests that simplify() drops the terms of a zero parameter and the factors
// of a unit parameter, then the parameters nothing reads.

// CHECK-DAG: #[[$PARAMS:[a-z_0-9]+]] = #hla.monoid<"p" inputs(q: [d], v: [dv]) params(two = 2.000000e+00) state(C: [d, dv]) token(C = two * q * v.T) combine(C = C.a + C.b) readout(num = q.T * C)>
// CHECK-DAG: #[[$UNIT_PRODUCT:[a-z_0-9]+]] = #hla.monoid<"u" state(n: []) token(n = 1) combine(n = n.a + n.b)>

// CHECK-LABEL: func.func @params
// CHECK-SAME: hla.simplified = #[[$PARAMS]]
func.func @params() attributes {hla.monoid = #hla.monoid<"p" inputs(q: [d], k: [d], v: [dv])
    params(one = 1.0, zero = 0.0, two = 2.0)
    state(C: [d, dv]) token(C = one * two * q * v.T + zero * k * v.T)
    combine(C = one * C.a + C.b) readout(num = one * q.T * C + zero * q.T * C)>} { return }

// A product of unit parameters alone is the literal 1.
// CHECK-LABEL: func.func @unit_product
// CHECK-SAME: hla.simplified = #[[$UNIT_PRODUCT]]
func.func @unit_product() attributes {hla.monoid = #hla.monoid<"u" params(one = 1.0)
    state(n: []) token(n = one) combine(n = n.a + n.b)>} { return }
