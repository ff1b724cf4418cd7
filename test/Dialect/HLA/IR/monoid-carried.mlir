// RUN: hla-opt %s --test-hla-monoid | FileCheck %s

// Tests which components a monoid carries: those its readouts read, closed
// under "read from operand A of a carried component's combine rule".

// Masked HLA2: the readout reads S, C, G; G's rule reads C.a; all carried.
// CHECK-LABEL: func.func @hla2
// CHECK-SAME: hla.carried = ["S", "C", "G"]
func.func @hla2() attributes {hla.monoid = #hla.monoid<"hla2" inputs(q: [d], k: [d], v: [dv])
    state(S: [d, d], C: [d, dv], G: [d, dv]) token(S = k * k.T, C = q * v.T)
    combine(S = S.a + S.b, C = C.a + C.b, G = G.a + G.b + S.b * C.a)
    readout(num = q.T * S * C - q.T * G)>} { return }

// AHLA: R is only read from operand B, so it is not carried.
// CHECK-LABEL: func.func @ahla
// CHECK-SAME: hla.carried = ["P", "E"]
func.func @ahla() attributes {hla.monoid = #hla.monoid<"ahla" inputs(q: [d], k: [d], v: [dv])
    state(R: [d, d], P: [d, dv], E: [d, dv]) token(R = k * q.T, P = k * v.T, E = k * q.T * k * v.T)
    combine(R = R.a + R.b, P = P.a + P.b, E = E.a + E.b + R.b * P.a) readout(num = q.T * E)>} { return }

// KDA: the transition M only composes with itself; only S is carried.
// CHECK-LABEL: func.func @kda
// CHECK-SAME: hla.carried = ["S"]
func.func @kda() attributes {hla.monoid = #hla.monoid<"kda" inputs(q: [d], k: [d], v: [dv])
    state(M: [d, d] eye, S: [d, dv]) token(S = k * v.T)
    combine(M = M.b * M.a, S = M.b * S.a + S.b) readout(num = q.T * S)>} { return }

// Without readouts nothing is carried.
// CHECK-LABEL: func.func @no_readout
// CHECK-SAME: hla.carried = []
func.func @no_readout() attributes {hla.monoid = #hla.monoid<"plain" state(S: [d]) combine(S = S.a + S.b)>} { return }
