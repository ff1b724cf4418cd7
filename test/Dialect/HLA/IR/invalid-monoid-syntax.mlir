// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that every name in a rule must be declared.
// expected-error @+1 {{'x' is not an input, parameter or component of the monoid}}
func.func @unknown() attributes {m = #hla.monoid<"m" state(S: [d]) combine(S = x)>}

// -----

// Tests that only .a, .b and .T are suffixes.
// expected-error @+1 {{unexpected suffix '.c' in factor 'S.c'}}
func.func @suffix() attributes {m = #hla.monoid<"m" state(S: [d]) combine(S = S.c)>}

// -----

// Tests that constants other than 0 and 1 must be parameters.
// expected-error @+1 {{the only numeric literals are a lone 0 and the factor 1}}
func.func @literal() attributes {m = #hla.monoid<"m" state(S: [d]) combine(S = 2 * S.a)>}

// -----

// Tests that a component has one combine rule.
// expected-error @+1 {{two combine rules for 'S'}}
func.func @twice() attributes {m = #hla.monoid<"m" state(S: [d]) combine(S = S.a, S = S.b)>}

// -----

// Tests that rules are written for components.
// expected-error @+1 {{rule for 'k', which is not a state component}}
func.func @not_component() attributes {m = #hla.monoid<"m" inputs(k: [d]) state(S: [d]) combine(S = S.a, k = S.b)>}

// -----

// Tests that diag() wraps an input.
// expected-error @+1 {{diag() of 'S', which is not a monoid input}}
func.func @diag_component() attributes {m = #hla.monoid<"m" state(S: [d, d]) combine(S = diag(S) * S.a)>}

// -----

// Tests that token rules read inputs, not the state.
// expected-error @+1 {{token rules cannot read state component 'S'}}
func.func @token_state() attributes {m = #hla.monoid<"m" state(S: [d]) token(S = S) combine(S = S.a)>}

// -----

// Tests that combine rules read the two operands, not inputs.
// expected-error @+1 {{combine rules cannot read input 'k'}}
func.func @combine_input() attributes {m = #hla.monoid<"m" inputs(k: [d]) state(S: [d]) combine(S = k)>}

// -----

// Tests that combine rules name the operand of every component.
// expected-error @+1 {{state component 'S' in a combine rule needs a side: 'S.a' or 'S.b'}}
func.func @no_side() attributes {m = #hla.monoid<"m" state(S: [d]) combine(S = S)>}

// -----

// Tests that readouts have no operand sides.
// expected-error @+1 {{sides (.a, .b) only exist in combine rules}}
func.func @readout_side() attributes {m = #hla.monoid<"m" inputs(q: [d]) state(S: [d]) combine(S = S.a) readout(num = q.T * S.a)>}

// -----

// Tests that parameters are plain scalars.
// expected-error @+1 {{parameter 'gamma' takes no suffix}}
func.func @param_suffix() attributes {m = #hla.monoid<"m" params(gamma = 0.5) state(S: [d]) combine(S = gamma.b * S.a)>}

// -----

// Tests that a readout is defined once.
// expected-error @+1 {{readout 'num' is defined twice}}
func.func @readout_twice() attributes {m = #hla.monoid<"m" inputs(q: [d]) state(S: [d]) combine(S = S.a) readout(num = q.T * S, num = q.T * S)>}

// -----

// Tests that a monoid begins with its name.
// expected-error @+1 {{expected string}}
func.func @no_name() attributes {m = #hla.monoid<state(S: [d]) combine(S = S.a)>}
