// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that slot names are plain identifiers.
// expected-error @+1 {{monoid component name 'S.x' must be a plain identifier}}
func.func @dotted() attributes {m = #hla.monoid<"m" state("S.x": []) combine()>}

// -----

// Tests that `diag` cannot name a slot (it starts a diag() factor).
// expected-error @+1 {{monoid input name 'diag' is reserved}}
func.func @reserved() attributes {m = #hla.monoid<"m" inputs(diag: [d]) state(S: [d]) combine(S = S.a + S.b)>}

// -----

// Tests that a name is defined once across inputs, params and components.
// expected-error @+1 {{monoid name 'k' is defined twice}}
func.func @duplicate() attributes {m = #hla.monoid<"m" inputs(k: [d]) state(k: [d]) combine(k = k.a + k.b)>}

// -----

// Tests that components are at most matrices.
// expected-error @+1 {{monoid component 'T3' has rank 3; at most 2 is supported}}
func.func @rank3() attributes {m = #hla.monoid<"m" state(T3: [d, d, d]) combine(T3 = T3.a)>}

// -----

// Tests that inputs are at most matrices.
// expected-error @+1 {{monoid input 'x' has rank 3; at most 2 is supported}}
func.func @input_rank3() attributes {m = #hla.monoid<"m" inputs(x: [d, d, d]) state(S: [d]) combine(S = S.a)>}

// -----

// Tests that a vector cannot have the identity-matrix identity.
// expected-error @+1 {{monoid component 'm' is a vector and cannot have identity 'eye'}}
func.func @eye_vector() attributes {m = #hla.monoid<"m" state(m: [d] eye) combine(m = m.a + m.b)>}

// -----

// Tests that an `eye` component is square.
// expected-error @+1 {{monoid component 'M' has identity 'eye' but is not square [d, dv]}}
func.func @eye_square() attributes {m = #hla.monoid<"m" state(M: [d, dv] eye) combine(M = M.a + M.b)>}

// -----

// Tests that a monoid has at least one component.
// expected-error @+1 {{monoid 'm' has no state components}}
func.func @empty() attributes {m = #hla.monoid<"m" state() combine()>}

// -----

// Tests that every component has a combine rule.
// expected-error @+1 {{monoid component 'C' has no combine rule}}
func.func @missing_combine() attributes {m = #hla.monoid<"m" state(S: [d], C: [d]) combine(S = S.a + S.b)>}

// -----

// Tests that diag() takes a vector.
// expected-error @+1 {{monoid token rule for 'M': diag() needs a vector, but 'w' has rank 2}}
func.func @diag_matrix() attributes {m = #hla.monoid<"m" inputs(w: [d, d]) state(M: [d, d]) token(M = diag(w)) combine(M = M.a + M.b)>}

// -----

// Tests that scalars cannot be transposed.
// expected-error @+1 {{monoid token rule for 'S' transposes a scalar}}
func.func @transpose_scalar() attributes {m = #hla.monoid<"m" inputs(beta: []) state(S: []) token(S = beta.T) combine(S = S.a + S.b)>}

// -----

// Tests that a matrix chain must conform.
// expected-error @+1 {{monoid token rule for 'P': cannot multiply (d x 1) by (dv x 1)}}
func.func @chain() attributes {m = #hla.monoid<"m" inputs(k: [d], v: [dv]) state(P: [d, dv]) token(P = k * v) combine(P = P.a + P.b)>}

// -----

// Tests that each term has its component's shape.
// expected-error @+1 {{monoid combine rule for 'P' has a term of shape (dv x d) but the component is (d x dv)}}
func.func @term_shape() attributes {m = #hla.monoid<"m" state(P: [d, dv]) combine(P = P.a + P.b.T)>}

// -----

// Tests that all terms of a readout have one shape.
// expected-error @+1 {{monoid readout rule for 'num' mixes term shapes (1 x dv) and (1 x d)}}
func.func @readout_mixed() attributes {m = #hla.monoid<"m" inputs(q: [d]) state(P: [d, dv], S: [d, d]) combine(P = P.a + P.b, S = S.a + S.b) readout(num = q.T * P + q.T * S)>}

// -----

// Tests that a readout is a vector or a scalar.
// expected-error @+1 {{monoid readout 'num' must be a vector or scalar, not (d x dv)}}
func.func @readout_matrix() attributes {m = #hla.monoid<"m" state(P: [d, dv]) combine(P = P.a + P.b) readout(num = P)>}

// -----

// Tests that a readout is not empty.
// expected-error @+1 {{monoid readout 'num' is empty}}
func.func @readout_empty() attributes {m = #hla.monoid<"m" state(P: [d, dv]) combine(P = P.a + P.b) readout(num = 0)>}
