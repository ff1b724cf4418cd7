// RUN: hla-opt %s --test-hla-monoid | FileCheck %s

// Tests that simplify() removes a decay component that is constantly one
// (identity 1, token value 1, rule rho.a * rho.b) from every product, and
// keeps it when the decay is not 1.

// CHECK-DAG: #[[$NO_DECAY:[a-z_0-9]+]] = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv]) token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>
// CHECK-DAG: #[[$DECAY:[a-z_0-9]+]] = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 5.000000e-01) state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma) combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>

// CHECK-LABEL: func.func @no_decay
// CHECK-SAME: hla.simplified = #[[$NO_DECAY]]
func.func @no_decay() attributes {hla.monoid = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv])
    params(gamma = 1.0) state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
    combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>} { return }

// CHECK-LABEL: func.func @decay
// CHECK-SAME: hla.simplified = #[[$DECAY]]
func.func @decay() attributes {hla.monoid = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv])
    params(gamma = 0.5) state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
    combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>} { return }
