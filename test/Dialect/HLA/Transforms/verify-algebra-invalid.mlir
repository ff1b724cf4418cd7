// RUN: hla-opt %s --split-input-file --hla-verify-algebra --verify-diagnostics -o /dev/null

// Tests that the HLA paper's printed decayed second-order rule, which decays
// G by ρ_B instead of ρ_B², is rejected: it is not associative.
// expected-error @+1 {{monoid 'hla2_paper': combine is not associative (relative error}}
func.func @paper_hla2() attributes {hla.monoid = #hla.monoid<"hla2_paper"
    inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
    state(S: [d, d], C: [d, dv], G: [d, dv], rho: [] eye)
    token(S = k * k.T, C = q * v.T, rho = gamma)
    combine(S = rho.b * S.a + S.b, C = rho.b * C.a + C.b,
            G = rho.b * G.a + G.b + rho.b * S.b * C.a, rho = rho.a * rho.b)
    readout(num = q.T * S * C - q.T * G)>} { return }

// -----

// Tests that an identity that is not a unit is rejected: an additive M with
// the identity matrix as its identity.
// expected-error @+1 {{monoid 'bad_identity': the identity is not a two-sided unit (relative error}}
func.func @bad_identity() attributes {hla.monoid = #hla.monoid<"bad_identity"
    inputs(k: [d]) state(M: [d, d] eye) token(M = k * k.T) combine(M = M.a + M.b)>} { return }

// -----

// Tests that a scalar decay with identity 0 instead of 1 is rejected.
// expected-error @+1 {{monoid 'zero_decay': the identity is not a two-sided unit}}
func.func @zero_decay() attributes {hla.monoid = #hla.monoid<"zero_decay"
    inputs(k: [d]) params(gamma = 0.5) state(P: [d], rho: [])
    token(P = k, rho = gamma) combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b)>} { return }
