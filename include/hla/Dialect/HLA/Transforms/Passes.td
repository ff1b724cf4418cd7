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

def HLAVerifyAlgebraPass : Pass<"hla-verify-algebra"> {
  let summary = "Check prefix-moment monoids numerically";
  let description = [{
    For every monoid in the IR (the `monoid` of algebra ops, any
    `#hla.monoid` attribute, and the monoid of every attention op), draws
    random tokens in double precision and checks that

    * the identity element is a two-sided unit of `combine`;
    * `combine` is associative on random multi-token segments;
    * a work-efficient (Blelloch) scan of the tokens gives the same readouts
      and carried states as the left-to-right serial recurrence, and the
      serial recurrence that keeps only the carried components (the others
      poisoned with NaN) agrees too, which proves the carried set closed.

    A failed check is an error naming the monoid, the law and the relative
    error; with `remarks`, a passing monoid gets a remark with the largest
    error seen. The paper's printed decayed HLA2 rule
    (`G = ρ_B G_A + G_B + S_B(ρ_B C_A)`) fails associativity.
  }];
  let options = [
    Option<"seed", "seed", "uint64_t", "1", "Random seed">,
    Option<"trials", "trials", "unsigned", "3",
           "Random triples per law">,
    Option<"length", "length", "unsigned", "13",
           "Tokens in the scan-versus-serial check">,
    Option<"tolerance", "tolerance", "double", "1e-9",
           "Largest relative error accepted">,
    Option<"remarks", "remarks", "bool", "false",
           "Emit a remark for every monoid that passes">
  ];
  let dependentDialects = ["::mlir::hla::HLADialect"];
}

#endif // HLA_DIALECT_HLA_TRANSFORMS_PASSES_TD
