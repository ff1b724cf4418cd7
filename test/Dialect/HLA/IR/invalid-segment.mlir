// RUN: hla-opt %s --split-input-file --verify-diagnostics

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that hla.segment takes exactly the inputs the token rules read.
func.func @input_count(%k: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{monoid 'la' reads 2 token inputs (k, v), got 1}}
  %p = hla.segment #la(%k) : (tensor<1x8x2x4xf32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that hla.segment returns every component.
func.func @result_count(%k: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{monoid 'la' has 1 components, got 2 results}}
  %p:2 = hla.segment #la(%k, %k) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that inputs share the results' leading dimensions.
func.func @lead(%k: tensor<1x8x2x4xf32>, %v: tensor<1x9x2x4xf32>) {
  // expected-error @+1 {{input #1 ('v') has leading shape [1, 9, 2] but the others have [1, 8, 2]}}
  %p = hla.segment #la(%k, %v) : (tensor<1x8x2x4xf32>, tensor<1x9x2x4xf32>) -> tensor<1x8x2x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that shared input heads must divide the result heads.
func.func @heads(%k: tensor<1x8x3x4xf32>) {
  // expected-error @+1 {{input #0 ('k') has leading shape [1, 8, 3] but the others have [1, 8, 4]}}
  %p = hla.segment #la(%k, %k) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x4x4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that one symbol has one size throughout.
func.func @symbol(%k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) {
  // expected-error @+1 {{input #0: 'k' has d = 4 but d = 5 elsewhere}}
  %p = hla.segment #la(%k, %v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x5x6xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that segments are float tensors.
func.func @integer(%k: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{results must be float tensors, got 'tensor<1x8x2x4x4xi32>'}}
  %p = hla.segment #la(%k, %k) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4x4xi32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that a result needs the component's trailing dimensions.
func.func @rank(%k: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{result #0 ('P') has rank 2 but needs some leading dimension(s) and 2 for the slot [d, dv]}}
  %p = hla.segment #la(%k, %k) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv], m: [d])
  token(P = k * v.T, m = k) combine(P = P.a + P.b, m = m.a + m.b) readout(num = q.T * P)>

// Tests that all segments share one element type.
func.func @mixed(%k: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{results mix element types 'f32' and 'f16'}}
  %p:2 = hla.segment #la(%k, %k) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4xf16>)
  return
}

// -----

#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
  token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>

// Tests that the inputs are float tensors (of any float types).
func.func @integer_input(%k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xi32>) {
  // expected-error @+1 {{inputs must be float tensors, got 'tensor<1x8x2x4xi32>'}}
  %p = hla.segment #la(%k, %v) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xi32>) -> tensor<1x8x2x4x4xf32>
  return
}
