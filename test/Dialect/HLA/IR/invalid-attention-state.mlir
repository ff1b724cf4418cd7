// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that the initial state must have one tensor per carried component
// (masked hla2 carries S, C, G).
func.func @count(%q: tensor<1x8x2x4xf32>, %s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{expects 3 initial_state tensors (S, C, G), got 2}}
  %o = hla.hla2 %q, %q, %q initial_state(%s, %s) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that normalization adds the denominator's moments to the state.
func.func @normalized_count(%q: tensor<1x8x2x4xf32>, %s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{expects 5 initial_state tensors (S, C, m, G, h), got 3}}
  %o = hla.hla2 %q, %q, %q initial_state(%s, %s, %s) {normalize = true} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that a state tensor's shape is [B, H_q, component shape].
func.func @shape(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>, %s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'initial_state' #1 (C) has shape [1, 2, 4, 4] but the state needs [1, 2, 4, 6]}}
  %o = hla.hla2 %q, %q, %v initial_state(%s, %s, %s) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x8x2x6xf32>
  return
}

// -----

// Tests that states are kept in f32 whatever the activations' type.
func.func @element_type(%q: tensor<1x8x2x4xbf16>, %p: tensor<1x2x4x4xbf16>) {
  // expected-error @+1 {{'initial_state' #0 (P) must be f32, got 'bf16'}}
  %o = hla.linear_attention %q, %q, %q initial_state(%p) : (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x2x4x4xbf16>) -> tensor<1x8x2x4xbf16>
  return
}

// -----

// Tests that the final state is checked like the initial state.
func.func @final_count(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{expects 3 final_state tensors (S, P, X), got 1}}
  %o, %s = hla.hla3 %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x4x4xf32>)
  return
}

// -----

// Tests that with cu_seqlens the state is per sequence, [N, H_q, ...].
func.func @packed_state(%q: tensor<1x8x2x4xf32>, %cu: tensor<4xi32>, %p: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'initial_state' #0 (P) has shape [1, 2, 4, 4] but the state needs [3, 2, 4, 4]}}
  %o = hla.linear_attention %q, %q, %q initial_state(%p) cu_seqlens(%cu) : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x2x4x4xf32>, tensor<4xi32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that exact LinSimp, which has no finite state, cannot return one.
func.func @exact_state(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>) {
  // expected-error @+1 {{has no state to carry in or out: kernel = exact has no finite prefix-moment state}}
  %o, %m = hla.linsimp %q, %q, %q, %q, %q, %omega {kernel = #hla.kernel<exact>} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// Tests that LinSimp's state includes the anchor halo of W-1 rows.
func.func @linsimp_halo(%q: tensor<1x8x2x4xf32>, %omega: tensor<16x4xf32>, %m: tensor<1x2x16x4xf32>, %a: tensor<1x2x16xf32>, %r: tensor<1x2x4x4xf32>, %valid: tensor<1x2x3xf32>) {
  // expected-error @+1 {{'initial_state' #2 (anchor_r) has shape [1, 2, 4, 4] but the state needs [1, 2, 3, 4]}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega initial_state(%m, %a, %r, %r, %valid) {window = 4 : i64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<16x4xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x3xf32>) -> tensor<1x8x2x4xf32>
  return
}
