// RUN: hla-opt %s --split-input-file --verify-diagnostics

// Tests that a query that is not [B, T, H, D] is rejected.
func.func @query_rank(%q: tensor<8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'hla.hla2' op 'query' must have rank 4 [B, T, H, D], but has rank 3}}
  %o = hla.hla2 %q, %k, %v : (tensor<8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that integer activations are rejected.
func.func @key_element_type(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xi32>, %v: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'key' element type must be f32, f16 or bf16, but is 'i32'}}
  %o = hla.hla2 %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xi32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that q, k and v must share one element type.
func.func @value_element_type(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf16>) {
  // expected-error @+1 {{'value' element type 'f16' differs from 'query' element type 'f32'}}
  %o = hla.linear_attention %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf16>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that the batch sizes must agree.
func.func @batch(%q: tensor<2x8x2x4xf32>, %k: tensor<3x8x2x4xf32>, %v: tensor<3x8x2x4xf32>) {
  // expected-error @+1 {{'key' batch size 3 differs from 'query' batch size 2}}
  %o = hla.ahla %q, %k, %v : (tensor<2x8x2x4xf32>, tensor<3x8x2x4xf32>, tensor<3x8x2x4xf32>) -> tensor<2x8x2x4xf32>
  return
}

// -----

// Tests that the sequence lengths must agree.
func.func @length(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x9x2x4xf32>) {
  // expected-error @+1 {{'value' sequence length 9 differs from 'query' sequence length 8}}
  %o = hla.hla3 %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x9x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that key and value must have the same number of heads.
func.func @kv_heads(%q: tensor<1x8x4x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x4x4xf32>) {
  // expected-error @+1 {{'value' head count 4 differs from 'key' head count 2}}
  %o = hla.hla2 %q, %k, %v : (tensor<1x8x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return
}

// -----

// Tests that query and key feature sizes must agree.
func.func @qk_features(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x8xf32>, %v: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'key' feature size 8 differs from 'query' feature size 4}}
  %o = hla.hla2 %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x8xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that query heads must form whole groups over the key/value heads.
func.func @head_groups(%q: tensor<1x8x3x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{query head count 3 is not a multiple of the key/value head count 2}}
  %o = hla.hla2 %q, %k, %v : (tensor<1x8x3x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x3x4xf32>
  return
}

// -----

// Tests that the output must be [B, T, H_q, dv].
func.func @output_shape(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x6xf32>) {
  // expected-error @+1 {{'output' has shape [1, 8, 2, 4] but [B, T, H_q, dv] is [1, 8, 2, 6]}}
  %o = hla.hla2 %q, %k, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// Tests that the output keeps the inputs' element type.
func.func @output_type(%q: tensor<1x8x2x4xbf16>, %k: tensor<1x8x2x4xbf16>, %v: tensor<1x8x2x4xbf16>) {
  // expected-error @+1 {{'output' element type 'f32' differs from 'query' element type 'bf16'}}
  %o = hla.hla2 %q, %k, %v : (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>) -> tensor<1x8x2x4xf32>
  return
}

// -----

func.func @empty_batch(%q: tensor<0x8x2x4xf32>) -> tensor<0x8x2x4xf32> {
  // expected-error @below {{'hla.hla2' op 'query' batch size must be at least 1, got 0}}
  %o = hla.hla2 %q, %q, %q : (tensor<0x8x2x4xf32>, tensor<0x8x2x4xf32>, tensor<0x8x2x4xf32>) -> tensor<0x8x2x4xf32>
  return %o : tensor<0x8x2x4xf32>
}

// -----

func.func @empty_features(%q: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x0xf32>) -> tensor<1x8x2x0xf32> {
  // expected-error @below {{'hla.linear_attention' op 'value' feature size must be at least 1, got 0}}
  %o = hla.linear_attention %q, %q, %v : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x0xf32>) -> tensor<1x8x2x0xf32>
  return %o : tensor<1x8x2x0xf32>
}
