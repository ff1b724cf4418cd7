// RUN: hla-opt %s --test-hla-monoid | FileCheck %s

// Tests that simplify() keeps the components the readouts depend on through
// either operand of a combine rule (R is read from B only, yet needed), drops
// the rest (m and n feed only a readout that is absent), and drops inputs
// nothing reads.

// CHECK-DAG: #[[$PRUNE:[a-z_0-9]+]] = #hla.monoid<"ahla" inputs(q: [d], k: [d], v: [dv]) state(R: [d, d], P: [d, dv], E: [d, dv]) token(R = k * q.T, P = k * v.T, E = k * q.T * k * v.T) combine(R = R.a + R.b, P = P.a + P.b, E = E.a + E.b + R.b * P.a) readout(num = q.T * E)>
// CHECK-DAG: #[[$KEEP_ALL:[a-z_0-9]+]] = #hla.monoid<"plain" state(S: [d], T: [d]) combine(S = S.a + S.b, T = T.a)>

// CHECK-LABEL: func.func @prune
// CHECK-SAME: hla.simplified = #[[$PRUNE]]
func.func @prune() attributes {hla.monoid = #hla.monoid<"ahla" inputs(q: [d], k: [d], v: [dv], w: [d])
    state(R: [d, d], P: [d, dv], m: [d], E: [d, dv], n: [d])
    token(R = k * q.T, P = k * v.T, m = w, E = k * q.T * k * v.T, n = k * q.T * k)
    combine(R = R.a + R.b, P = P.a + P.b, m = m.a + m.b, E = E.a + E.b + R.b * P.a,
            n = n.a + n.b + R.b * m.a)
    readout(num = q.T * E)>} { return }

// Without readouts the monoid is kept whole.
// CHECK-LABEL: func.func @keep_all
// CHECK-SAME: hla.simplified = #[[$KEEP_ALL]]
func.func @keep_all() attributes {hla.monoid = #hla.monoid<"plain" state(S: [d], T: [d]) combine(S = S.a + S.b, T = T.a)>} { return }
