// RUN: hla-opt %s --split-input-file --hla-add-summary-entries --verify-diagnostics

// Tests that the function must be exactly one attention op.
// expected-error @+1 {{hla-add-summary-entries: @main must return the output of one attention op and do nothing else}}
func.func @main(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %o = hla.linear_attention %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  %p = arith.addf %o, %o : tensor<1x8x2x4xf32>
  return %p : tensor<1x8x2x4xf32>
}

// -----

// Tests that the op's operands must be the function's arguments.
func.func @main(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
  %c = arith.constant dense<1.0> : tensor<1x8x2x4xf32>
  // expected-error @+1 {{hla-add-summary-entries: the attention op's operands must be arguments of @main}}
  %o = hla.hla2 %q, %c, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}

// -----

// Tests that an op without a finite state (exact LinSimp) is refused.
func.func @main(%q: tensor<1x8x2x4xf32>, %omega: tensor<8x4xf32>) -> tensor<1x8x2x4xf32> {
  // expected-error @+1 {{hla-add-summary-entries: kernel = exact has no finite prefix-moment state}}
  %o = hla.linsimp %q, %q, %q, %q, %q, %omega {kernel = #hla.kernel<exact>} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<8x4xf32>) -> tensor<1x8x2x4xf32>
  return %o : tensor<1x8x2x4xf32>
}

// -----

// Tests that the added names must be free.
// expected-error @+1 {{hla-add-summary-entries: @main_summary already exists}}
module {
  func.func @main(%q: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
    %o = hla.linear_attention %q, %q, %q : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
    return %o : tensor<1x8x2x4xf32>
  }
  func.func @main_summary() {
    return
  }
}

// -----

// Tests that the function must exist.
// expected-error @+1 {{hla-add-summary-entries: no function @main with a body}}
module {
  func.func private @main(tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32>
}
