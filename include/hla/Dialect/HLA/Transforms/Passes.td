//===- Passes.td - hla transformation passes ---------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_TRANSFORMS_PASSES_TD
#define HLA_DIALECT_HLA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def HLAExpandPass : Pass<"hla-expand"> {
  let summary = "Rewrite attention ops into prefix-moment algebra ops";
  let description = [{
    Replaces every attention op by the algebra ops of its monoid (the op's
    library monoid with its options applied and simplified, see
    `getAttentionMonoid`): `hla.segment` builds one-token segments, an
    inclusive `hla.scan` (from the initial state, per packed sequence with
    `cu_seqlens`) makes the prefix states and the final state, and
    `hla.readout` produces the output. LinSimp additionally maps keys to
    random features (`hla.feature_map`) and reads out over its anchor window
    (`hla.anchor_readout`). `hla.linsimp` with `kernel = exact` has no
    finite state and is left as it is.

    Before:

    ```mlir
    %o = hla.linear_attention %q, %k, %v {scale = 1.0 : f64}
        : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
        -> tensor<1x8x2x4xf32>
    ```

    After:

    ```mlir
    #linear_attention = #hla.monoid<"linear_attention"
      inputs(q: [d], k: [d], v: [dv]) state(P: [d, dv])
      token(P = k * v.T) combine(P = P.a + P.b) readout(num = q.T * P)>
    %P = hla.segment #linear_attention(%k, %v) : ... -> tensor<1x8x2x4x4xf32>
    %Ps = hla.scan #linear_attention(%P) : ... -> tensor<1x8x2x4x4xf32>
    %o = hla.readout #linear_attention(%q) state(%Ps) : ... -> tensor<1x8x2x4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::hla::HLADialect"];
  let statistics = [
    Statistic<"numExpanded", "num-expanded", "Attention ops expanded">,
    Statistic<"numKept", "num-kept",
              "Attention ops without a monoid, left in place">
  ];
}

#endif // HLA_DIALECT_HLA_TRANSFORMS_PASSES_TD
