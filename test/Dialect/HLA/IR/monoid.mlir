// RUN: hla-opt %s | FileCheck %s
// RUN: hla-opt %s | hla-opt | FileCheck %s
// RUN: hla-opt %s --mlir-print-op-generic | hla-opt | FileCheck %s

// Tests that #hla.monoid round-trips every piece of its syntax: inputs of
// rank 0-2, parameters, `eye` identities, transposes, sides, diag() and
// diag(exp()), the literals 0 and 1, signs, and readouts. Monoids print as
// aliases named after them.

// CHECK-DAG: #[[$AFFINE:.+]] = #hla.monoid<"affine" inputs(k: [d], v: [dv], g: [d], beta: []) params(two = 2.000000e+00) state(M: [d, d] eye, S: [d, dv]) token(M = diag(exp(g)) - beta * k * k.T * diag(g), S = two * beta * k * v.T) combine(M = M.b * M.a, S = M.b * S.a + S.b)>
// CHECK-DAG: #[[$MOMENTS:.+]] = #hla.monoid<"moments" inputs(q: [d], k: [d], v: [dv], w: [d, dv]) params(gamma = 5.000000e-01) state(S: [d, d], C: [d, dv], G: [d, dv], n: [], rho: [] eye) token(S = k * k.T, C = q * v.T + w, n = 1, rho = gamma) combine(S = rho.b * S.a + S.b, C = rho.b * C.a + C.b, G = rho.b * rho.b * G.a + G.b - rho.b * S.b.T * C.a, n = n.a + n.b, rho = rho.a * rho.b) readout(num = q.T * S * C - q.T * G, den = n + q.T * S.T * q)>

// CHECK-LABEL: func.func @moments
// CHECK-SAME: hla.m = #[[$MOMENTS]]
func.func @moments() attributes {hla.m = #hla.monoid<"moments"
    inputs(q: [d], k: [d], v: [dv], w: [d, dv])
    params(gamma = 0.5)
    state(S: [d, d], C: [d, dv], G: [d, dv], n: [], rho: [] eye)
    token(S = k * k.T, C = q * v.T + w, G = 0, n = 1, rho = gamma)
    combine(S = rho.b * S.a + S.b, C = rho.b * C.a + C.b,
            G = rho.b * rho.b * G.a + G.b - rho.b * S.b.T * C.a,
            n = n.a + n.b, rho = rho.a * rho.b)
    readout(num = q.T * S * C - q.T * G, den = 1 * n + q.T * S.T * q)>} {
  return
}

// CHECK-LABEL: func.func @affine
// CHECK-SAME: hla.m = #[[$AFFINE]]
func.func @affine() attributes {hla.m = #hla.monoid<"affine"
    inputs(k: [d], v: [dv], g: [d], beta: [])
    params(two = 2.0)
    state(M: [d, d] eye, S: [d, dv])
    token(M = diag(exp(g)) - beta * k * k.T * diag(g), S = two * beta * k * v.T)
    combine(M = M.b * M.a, S = M.b * S.a + S.b)>} {
  return
}
