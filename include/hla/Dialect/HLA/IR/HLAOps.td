//===- HLAOps.td - hla operations --------------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_IR_HLAOPS_TD
#define HLA_DIALECT_HLA_IR_HLAOPS_TD

include "hla/Dialect/HLA/IR/HLADialect.td"
include "hla/Dialect/HLA/IR/HLAAttrs.td"
include "hla/Dialect/HLA/IR/HLAEnums.td"
include "hla/Dialect/HLA/IR/HLAInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"

//===----------------------------------------------------------------------===//
// Attention ops
//===----------------------------------------------------------------------===//

// Operands and results every attention op shares. Element types, ranks and
// sizes are checked by the C++ verifier, which names the operand and both
// sizes in its diagnostics.
defvar HLA_AttentionTail = (ins
  Variadic<AnyRankedTensor>:$initial_state,
  Optional<AnyRankedTensor>:$cu_seqlens
);

class HLA_AttentionOp<string mnemonic, list<Trait> traits = []>
    : HLA_Op<mnemonic, traits # [Pure, AttrSizedOperandSegments,
        HLA_AttentionOpInterface]> {
  let results = (outs AnyRankedTensor:$output,
                      Variadic<AnyRankedTensor>:$final_state);
  let hasVerifier = 1;
}

// Assembly shared by the q/k/v ops.
defvar HLA_QKVFormat = [{
  $query `,` $key `,` $value
  (`initial_state` `(` $initial_state^ `)`)?
  (`cu_seqlens` `(` $cu_seqlens^ `)`)?
  (`head_decay` `(` $head_decay^ `)`)?
  attr-dict `:` functional-type(operands, results)
}];

// The decay's rate per query head, given at run time (learnable), instead
// of the `decay` attribute.
defvar HLA_HeadDecay = (ins Optional<AnyRankedTensor>:$head_decay);

defvar HLA_HeadDecayDoc = [{
    `head_decay` (a `[H_q]` f32 tensor of rates in (0, 1], one per query
    head) replaces the `decay` attribute when the rate is a value of the
    program, e.g. a learned parameter; an op takes one or the other.
}];

defvar HLA_StateDoc = [{
    `initial_state` and the `final_state` results are the carried components
    of the op's monoid in component order, each `[B, H_q, ...]` (or
    `[N, H_q, ...]` with `cu_seqlens`), element type f32. With `cu_seqlens`
    (a rank-1 i32/i64 tensor of N+1 nondecreasing offsets from 0 to T) the
    batch is one packed sequence (B = 1) of N independent sequences.
}];

def HLA_LinearAttentionOp : HLA_AttentionOp<"linear_attention"> {
  let summary = "first-order causal linear attention";
  let description = [{
    `o_t = Σ_{j≤t} γ^{t−j} (s q_t · k_j) v_j`, optionally normalized by
    `Σ_{j≤t} γ^{t−j} (s q_t · k_j) + eps` (SEMANTICS.md §1). Grouped heads:
    key and value may have fewer heads than the query (H_q % H_kv == 0).
  }] # HLA_HeadDecayDoc # HLA_StateDoc # [{

    ```mlir
    %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64}
        : (tensor<1x64x2x16xf32>, tensor<1x64x2x16xf32>,
           tensor<1x64x2x16xf32>) -> tensor<1x64x2x16xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value),
    HLA_AttentionTail, HLA_HeadDecay, (ins
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<BoolAttr, "false">:$normalize,
    DefaultValuedAttr<F64Attr, "1e-6">:$eps,
    OptionalAttr<F64Attr>:$decay));
  let assemblyFormat = HLA_QKVFormat;
}

def HLA_HLA2Op : HLA_AttentionOp<"hla2"> {
  let summary = "second-order symmetric higher-order linear attention";
  let description = [{
    Masked (default): `o_t = Σ_{j≤t} Σ_{i≤j} γ^{(t−i)+(t−j)} (q_t·k_i)(q_j·k_i)
    v_j`; unmasked (`masked = false`): `i ≤ t` instead of `i ≤ j`. `ridge`
    λ ≥ 0 adds `λ Σ_{j≤t} γ^{t−j} (q_t·q_j) v_j`; `normalize` divides by the
    same sum with every `v_j` replaced by 1, plus `eps` (SEMANTICS.md §2).
  }] # HLA_HeadDecayDoc # HLA_StateDoc # [{

    ```mlir
    %o, %S, %C, %G = hla.hla2 %q, %k, %v initial_state(%S0, %C0, %G0)
        {scale = 1.0 : f64}
        : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
           tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
        -> (tensor<1x8x2x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>,
            tensor<1x2x4x4xf32>)
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value),
    HLA_AttentionTail, HLA_HeadDecay, (ins
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<BoolAttr, "true">:$masked,
    DefaultValuedAttr<BoolAttr, "false">:$normalize,
    DefaultValuedAttr<F64Attr, "1e-6">:$eps,
    OptionalAttr<F64Attr>:$decay,
    DefaultValuedAttr<F64Attr, "0.0">:$ridge));
  let assemblyFormat = HLA_QKVFormat;
}

def HLA_AHLAOp : HLA_AttentionOp<"ahla"> {
  let summary = "asymmetric second-order higher-order linear attention";
  let description = [{
    `o_t = Σ_{j≤i≤t} γ^{t−j} (q_t·k_i)(q_i·k_j) v_j` (SEMANTICS.md §3),
    optionally normalized.
  }] # HLA_HeadDecayDoc # HLA_StateDoc # [{

    ```mlir
    %o = hla.ahla %q, %k, %v {normalize = true}
        : (tensor<2x16x4x8xbf16>, tensor<2x16x2x8xbf16>,
           tensor<2x16x2x8xbf16>) -> tensor<2x16x4x8xbf16>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value),
    HLA_AttentionTail, HLA_HeadDecay, (ins
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<BoolAttr, "false">:$normalize,
    DefaultValuedAttr<F64Attr, "1e-6">:$eps,
    OptionalAttr<F64Attr>:$decay));
  let assemblyFormat = HLA_QKVFormat;
}

def HLA_HLA3Op : HLA_AttentionOp<"hla3"> {
  let summary = "third-order causal higher-order linear attention";
  let description = [{
    `o_t = Σ_{u≤t} Σ_{i≤u} Σ_{j≤u} (q_t·k_i)(q_u·k_i)(q_u·k_j) v_j`, the
    causal masked third-order operator `((W Wᵀ ⊙ L) W) V` (SEMANTICS.md §4;
    not the paper's Algorithm 3), with optional decay and normalization.
  }] # HLA_HeadDecayDoc # HLA_StateDoc # [{

    ```mlir
    %o = hla.hla3 %q, %k, %v
        : (tensor<1x32x2x8xf16>, tensor<1x32x2x8xf16>,
           tensor<1x32x2x8xf16>) -> tensor<1x32x2x8xf16>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value),
    HLA_AttentionTail, HLA_HeadDecay, (ins
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<BoolAttr, "false">:$normalize,
    DefaultValuedAttr<F64Attr, "1e-6">:$eps,
    OptionalAttr<F64Attr>:$decay));
  let assemblyFormat = HLA_QKVFormat;
}

def HLA_LinSimpOp : HLA_AttentionOp<"linsimp"> {
  let summary = "linearized 2-simplicial attention";
  let description = [{
    Global keys/values `(k, v)` and windowed anchors `(r, u)`; `omega` is the
    `[m, d]` random-feature matrix. With `kernel = favor` (default):
    `o_i = Σ_{c∈C_i} u_c ⊙ (M_iᵀ φ(x_ic)) / Σ_{c∈C_i} φ(x_ic)·a_i`, with
    `C_i = [max(0, i−W+1), i]`, `x_ic = τ^½ (q_i ⊙ r_c)`, `M_i, a_i` the
    prefix sums of `φ(τ^½ k_j) v_jᵀ` and `φ(τ^½ k_j)`, and
    `φ(z) = m^-½ exp(Ω z − ‖z‖²/2)`. `kernel = exact` is the softmax over all
    (j ≤ i, c ∈ C_i) pairs of `exp(τ (q_i ⊙ r_c)·k_j)`; it has no finite
    state. τ is `scale` (default d^-½). See SEMANTICS.md §5.

    States (favor only): `M [m, dv]`, `a [m]`, then the last W−1 anchors
    `r [W−1, d]`, `u [W−1, dv]` and their validity `[W−1]` (1 for a real
    anchor, 0 for padding before the first token), each per `[B, H_q]`.

    ```mlir
    %o = hla.linsimp %q, %k, %v, %r, %u, %omega {window = 16 : i64}
        : (tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>,
           tensor<1x32x2x8xf32>, tensor<1x32x2x8xf32>, tensor<64x8xf32>)
        -> tensor<1x32x2x8xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value,
    AnyRankedTensor:$anchor_key, AnyRankedTensor:$anchor_value,
    AnyRankedTensor:$omega),
    HLA_AttentionTail, (ins
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<I64Attr, "64">:$window,
    DefaultValuedAttr<HLA_FeatureKernelAttr,
                      "::mlir::hla::FeatureKernel::favor">:$kernel));
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $anchor_key `,` $anchor_value `,` $omega
    (`initial_state` `(` $initial_state^ `)`)?
    (`cu_seqlens` `(` $cu_seqlens^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def HLA_KDAOp : HLA_AttentionOp<"kda"> {
  let summary = "Kimi Delta Attention (gated delta rule)";
  let description = [{
    `S_t = (I − β_t k_t k_tᵀ) Diag(exp g_t) S_{t−1} + β_t k_t v_tᵀ`,
    `o_t = S_tᵀ (s q_t)` (SEMANTICS.md §6). `g` is the per-channel log-decay
    `[B, T, H_kv, dk]` (≤ 0), `beta` the write strength `[B, T, H_kv]`.
    State: `S [dk, dv]` per `[B, H_q]`.

    ```mlir
    %o = hla.kda %q, %k, %v, %g, %beta
        : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>,
           tensor<1x16x2x8xf32>, tensor<1x16x2xf32>) -> tensor<1x16x2x8xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value,
    AnyRankedTensor:$g, AnyRankedTensor:$beta),
    HLA_AttentionTail, (ins
    OptionalAttr<F64Attr>:$scale));
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $g `,` $beta
    (`initial_state` `(` $initial_state^ `)`)?
    (`cu_seqlens` `(` $cu_seqlens^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Algebra ops
//===----------------------------------------------------------------------===//

def HLA_SegmentOp : HLA_Op<"segment", [Pure, AttrSizedOperandSegments]> {
  let summary = "one-token segments of a prefix-moment monoid";
  let description = [{
    Applies the monoid's `token` rules at every position: the operands are
    the token inputs the rules read (in the monoid's input order), each
    `[lead..., input shape]`; the results are every state component,
    `[lead..., component shape]`. The last leading dimension is the head
    axis: an operand with H_i heads is shared by H / H_i consecutive result
    heads (grouped K/V heads). The operands are float tensors of any float
    types (LinSimp's f32 key features beside bf16 values); the results
    share one.

    `head_params` gives the monoid's per-head parameters (`gamma =
    per_head`), one `[H]` f32 tensor each, in parameter order: the token
    rules at head h read element h.

    ```mlir
    %S, %C = hla.segment #m (%q, %k, %v)
        : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
        -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>)
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       Variadic<AnyRankedTensor>:$inputs,
                       Variadic<AnyRankedTensor>:$head_params);
  let results = (outs Variadic<AnyRankedTensor>:$segments);
  let assemblyFormat = [{
    $monoid `(` $inputs `)` (`head_params` `(` $head_params^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_CombineOp : HLA_Op<"combine", [Pure, AttrSizedOperandSegments]> {
  let summary = "associative combine of two segments (A then B)";
  let description = [{
    Evaluates the monoid's `combine` rules elementwise over the leading
    dimensions (there may be none: one pair of states): `lhs` is the earlier
    segment A, `rhs` the later segment B, both with every state component.

    ```mlir
    %S, %C = hla.combine #m (%Sa, %Ca), (%Sb, %Cb)
        : (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>,
           tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>)
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       Variadic<AnyRankedTensor>:$lhs,
                       Variadic<AnyRankedTensor>:$rhs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $monoid `(` $lhs `)` `,` `(` $rhs `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_ScanOp : HLA_Op<"scan", [Pure, AttrSizedOperandSegments]> {
  let summary = "prefix scan of segments under a monoid";
  let description = [{
    Scans `segments` (every state component, `[lead..., shape]`) along
    `axis` under the monoid. Inclusive (default): position t holds the
    combine of segments 0..t; `exclusive`: of segments 0..t−1. With `init`
    (the carried components, leading dimensions without the scan axis), the
    scan starts from that state instead of the identity. With `cu_seqlens`
    (axis 1, batch 1) the scan restarts at every packed-sequence offset and
    `init` / the final states are per sequence, `[N, ...]`.

    Results: the carried components at every position, then — when there
    are twice as many results — the carried components of each sequence's
    total (the final state).

    ```mlir
    %S, %C, %Sf, %Cf = hla.scan #m (%s, %c) {axis = 1 : i64}
        : (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>)
        -> (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>,
            tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       Variadic<AnyRankedTensor>:$segments,
                       Variadic<AnyRankedTensor>:$init,
                       Optional<AnyRankedTensor>:$cu_seqlens,
                       UnitAttr:$exclusive,
                       DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    (`exclusive` $exclusive^)? $monoid `(` $segments `)`
    (`init` `(` $init^ `)`)? (`cu_seqlens` `(` $cu_seqlens^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of carried components (prefix results).
    unsigned getNumCarried() {
      return getMonoid().getCarryComponents().size();
    }
    /// The per-position prefix states.
    ::mlir::ResultRange getPrefix() {
      return getResults().take_front(getNumCarried());
    }
    /// The final states (empty when not requested).
    ::mlir::ResultRange getFinal() {
      return getResults().drop_front(getNumCarried());
    }
  }];
}

def HLA_TotalOp : HLA_Op<"total", [Pure, AttrSizedOperandSegments]> {
  let summary = "combine of all segments along an axis (a segment's summary)";
  let description = [{
    Combines `segments` (every state component, `[lead..., shape]`) along
    `axis` under the monoid, in order, and returns every component of the
    total, `[lead without axis..., shape]`: what a span of tokens does to
    any state that comes before it. An empty axis gives the identity. The
    carried components alone are a scan's final state; the others (a
    decay's power, KDA's transition, the parts of a higher order a later
    segment applies to an earlier state) are what lets the total be
    combined with states computed elsewhere (context parallelism: each
    rank's total, exchanged, combined in rank order). With `cu_seqlens`
    (axis 1, batch 1) the totals are per packed sequence, `[N, ...]`.

    ```mlir
    %P, %m, %rho = hla.total #m (%p, %mm, %r) {axis = 1 : i64}
        : (tensor<1x8x2x4x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>)
        -> (tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2xf32>)
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       Variadic<AnyRankedTensor>:$segments,
                       Optional<AnyRankedTensor>:$cu_seqlens,
                       DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Variadic<AnyRankedTensor>:$totals);
  let assemblyFormat = [{
    $monoid `(` $segments `)` (`cu_seqlens` `(` $cu_seqlens^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_ReadoutOp : HLA_Op<"readout", [Pure, AttrSizedOperandSegments]> {
  let summary = "output of an inclusive prefix state";
  let description = [{
    Evaluates the monoid's `num` readout at every position; when the monoid
    also has a `den` readout the result is `num / (den + eps)`. `inputs` are
    the inputs the readouts read (in the monoid's input order), `state` the
    carried components.

    ```mlir
    %o = hla.readout #m (%q) state(%S, %C)
        : (tensor<1x8x2x4xf32>, tensor<1x8x2x4x4xf32>, tensor<1x8x2x4x4xf32>)
        -> tensor<1x8x2x4xf32>
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       Variadic<AnyRankedTensor>:$inputs,
                       Variadic<AnyRankedTensor>:$state,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $monoid `(` $inputs `)` `state` `(` $state `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_PrefixVjpOp : HLA_Op<"prefix_vjp", [Pure, AttrSizedOperandSegments]> {
  let summary = "vector-Jacobian product of segment -> inclusive scan -> readout";
  let description = [{
    The backward of the chain `hla.readout(inputs, hla.scan(hla.segment(
    inputs)))` under the monoid: given the cotangent of the readout's output
    (`num / (den + eps)` when the monoid has a `den` readout, else `num`),
    the gradient of every monoid input, in the monoid's input order. The
    operands are every input of the monoid, `[B, T, H, input shape]` (T the
    scanned axis, every input with the same heads), and the cotangent,
    shaped like the readout's output; each result has its input's type.

    With `init` (the carried components of the state before the first
    token, `[B, H, ...]`, as `hla.scan`'s) the chain starts from that state
    and the results go on with the gradient of each `init` tensor. With
    `final_cotangent` (one per carried component, `[B, H, ...]`) the state
    after the last token is an output too, and that is its cotangent.

    `head_params` gives the monoid's per-head parameters as `hla.segment`'s
    does (a decay's rate per head), and the results end with the gradient
    of each: `hla-chunk` reverse-differentiates every chunk's forward
    program with respect to its head's log rate (ReverseDiff.h).

    The gradient is derived from the monoid by `hla-chunk` (ChunkVjp.h): a
    pass over the chunks for their carried-in states, then a reverse pass
    carrying the cotangent of the state from chunk to chunk (from the final
    state's cotangent, or zero); the initial state's gradient is the
    cotangent it carries out of the first chunk. Under the gated delta rule
    (KDA), whose matrix transition has no index plan, each chunk of the
    reverse pass is the reverse-mode derivative of the chunk's WY/UT form
    (ReverseDiff.h).

    ```mlir
    %dq, %dk, %dv = hla.prefix_vjp #m (%q, %k, %v) cotangent(%do)
        : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
           tensor<1x8x2x4xf32>)
        -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       Variadic<AnyRankedTensor>:$inputs,
                       Variadic<AnyRankedTensor>:$init,
                       AnyRankedTensor:$cotangent,
                       Variadic<AnyRankedTensor>:$final_cotangent,
                       Variadic<AnyRankedTensor>:$head_params,
                       DefaultValuedAttr<F64Attr, "1e-6">:$eps);
  let results = (outs Variadic<AnyRankedTensor>:$gradients);
  let assemblyFormat = [{
    $monoid `(` $inputs `)` (`init` `(` $init^ `)`)? `cotangent` `(` $cotangent `)`
    (`final_cotangent` `(` $final_cotangent^ `)`)?
    (`head_params` `(` $head_params^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_AnchorVjpOp : HLA_Op<"anchor_vjp", [Pure, AttrSizedOperandSegments]> {
  let summary = "vector-Jacobian product of LinSimp's favor chain";
  let description = [{
    The backward of `hla.anchor_readout(q, r, u, omega, hla.scan(
    hla.segment(φ, v)))` with `φ = hla.feature_map(k, omega)` at `scale`
    (LinSimp's favor kernel, SEMANTICS.md §5): given the cotangent of the
    readout's output, the gradients of `q, k, v, r, u` and `omega`, then of
    each `init` tensor. The monoid is LinSimp's (inputs `phi`, `v` and the
    anchor feature `f`; readouts `num` and `den`). Every token operand is
    `[B, T, H, ...]` with the query's heads.

    With `init` (the carried components `M [B, H, m, dv]`, `a [B, H, m]`,
    then the last W−1 anchors `r`, `u` and their validity, all f32) the
    chain starts from that state; the validity's gradient is zero. With
    `final_cotangent` (one per `init` tensor; the validity's is not read)
    the final state is an output too.

    `hla-chunk` derives it from the chunk's forward program (ReverseDiff.h):
    a pass over the chunks saves the state entering each, then a pass from
    the last chunk to the first recomputes each chunk's readouts from it
    and differentiates them, one anchor offset at a time, carrying the
    cotangent of the state (M, a and the anchor ring) back.

    ```mlir
    %dq, %dk, %dv, %dr, %du, %domega = hla.anchor_vjp #m (%q, %k, %v, %r, %u)
        omega(%omega) cotangent(%do) {window = 4 : i64, scale = 0.5 : f64}
        : (...) -> (...)
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       AnyRankedTensor:$query,
                       AnyRankedTensor:$key,
                       AnyRankedTensor:$value,
                       AnyRankedTensor:$anchor_key,
                       AnyRankedTensor:$anchor_value,
                       AnyRankedTensor:$omega,
                       Variadic<AnyRankedTensor>:$init,
                       AnyRankedTensor:$cotangent,
                       Variadic<AnyRankedTensor>:$final_cotangent,
                       I64Attr:$window,
                       F64Attr:$scale);
  let results = (outs Variadic<AnyRankedTensor>:$gradients);
  let assemblyFormat = [{
    $monoid `(` $query `,` $key `,` $value `,` $anchor_key `,` $anchor_value `)`
    `omega` `(` $omega `)` (`init` `(` $init^ `)`)? `cotangent` `(` $cotangent `)`
    (`final_cotangent` `(` $final_cotangent^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_LinSimpExactVjpOp : HLA_Op<"linsimp_exact_vjp", [Pure]> {
  let summary = "vector-Jacobian product of LinSimp's exact kernel";
  let description = [{
    The backward of `hla.linsimp` with `kernel = exact` (the softmax over
    every (key j ≤ i, anchor c ∈ C_i) pair of `exp(τ (q_i ⊙ r_c)·k_j)`,
    SEMANTICS.md §5): given the output's cotangent, the gradients of
    `q, k, v, r, u`. Every operand is `[B, T, H, ...]` with the query's
    heads (grouped heads are repeated before); no state, no packed
    sequences.

    `hla-lower-linsimp-exact` lowers it: each query's log-normaliser from
    the forward's loops, then per (batch entry, head) a loop over the query
    chunks whose (anchor offset, key chunk) blocks are differentiated in
    reverse (ReverseDiff.h) under that fixed normaliser.

    ```mlir
    %dq, %dk, %dv, %dr, %du = hla.linsimp_exact_vjp %q, %k, %v, %r, %u
        cotangent(%do) {window = 4 : i64, scale = 0.5 : f64} : (...) -> (...)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       AnyRankedTensor:$value, AnyRankedTensor:$anchor_key,
                       AnyRankedTensor:$anchor_value,
                       AnyRankedTensor:$cotangent,
                       I64Attr:$window, F64Attr:$scale);
  let results = (outs AnyRankedTensor:$dq, AnyRankedTensor:$dk,
                      AnyRankedTensor:$dv, AnyRankedTensor:$dr,
                      AnyRankedTensor:$du);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $anchor_key `,` $anchor_value
    `cotangent` `(` $cotangent `)` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_FeatureMapOp : HLA_Op<"feature_map", [Pure]> {
  let summary = "positive random features φ(z) = m^-½ exp(Ω z − ‖z‖²/2)";
  let description = [{
    With `z = sqrt(scale) · x`: maps `[lead..., d]` to `[lead..., m]` for an
    `[m, d]` feature matrix `omega`; `φ(y)·φ(z)` estimates `exp(y·z)`
    (SEMANTICS.md §5).

    ```mlir
    %phi = hla.feature_map %k, %omega {scale = 0.125 : f64}
        : (tensor<1x8x2x4xf32>, tensor<16x4xf32>) -> tensor<1x8x2x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$omega,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $input `,` $omega attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HLA_RandomFeaturesOp : HLA_Op<"random_features", [Pure]> {
  let summary = "LinSimp's seeded random feature matrix Ω";
  let description = [{
    The `[m, d]` feature matrix of LinSimp's favor kernel for `seed`
    (SEMANTICS.md §5; the generator is specified in docs/RandomFeatures.md
    and reproduced bit for bit by `hla.random_features` in Python):
    ⌈m/d⌉ orthogonal d x d blocks (Gram-Schmidt with positive diagonal of R,
    the sign fix), the first m rows, each scaled by the norm of an
    independent standard normal d-vector. `hla-expand` replaces it by the
    constant.

    ```mlir
    %omega = hla.random_features {seed = 7 : i64} : tensor<256x64xf32>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def HLA_AnchorReadoutOp : HLA_Op<"anchor_readout",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "LinSimp readout over a window of anchors";
  let description = [{
    For every position i and anchor `c ∈ [i−W+1, i]` (within the same packed
    sequence; earlier anchors come from `anchors`, the last W−1 anchors of
    the previous segment with their validity), forms the anchor query
    `f_ic = φ(sqrt(scale) (q_i ⊙ r_c))` with `omega`, evaluates the monoid's
    `num` and `den` readouts with input `f` against the prefix state at i,
    and returns `Σ_c u_c ⊙ num_ic / Σ_c den_ic`. Optional extra results are
    the last W−1 anchors `(r, u, valid)` of each sequence (the anchor part
    of LinSimp's final state).

    ```mlir
    %o = hla.anchor_readout #m (%q, %r, %u) omega(%omega) state(%M, %a)
        {window = 4 : i64, scale = 0.5 : f64}
        : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>,
           tensor<16x4xf32>, tensor<1x8x2x16x4xf32>, tensor<1x8x2x16xf32>)
        -> tensor<1x8x2x4xf32>
    ```
  }];
  let arguments = (ins HLA_MonoidAttr:$monoid,
                       AnyRankedTensor:$query,
                       AnyRankedTensor:$anchor_key,
                       AnyRankedTensor:$anchor_value,
                       AnyRankedTensor:$omega,
                       Variadic<AnyRankedTensor>:$state,
                       Variadic<AnyRankedTensor>:$anchors,
                       Optional<AnyRankedTensor>:$cu_seqlens,
                       I64Attr:$window,
                       F64Attr:$scale);
  let results = (outs AnyRankedTensor:$output,
                      Variadic<AnyRankedTensor>:$final_anchors);
  let assemblyFormat = [{
    $monoid `(` $query `,` $anchor_key `,` $anchor_value `)`
    `omega` `(` $omega `)` `state` `(` $state `)`
    (`anchors` `(` $anchors^ `)`)? (`cu_seqlens` `(` $cu_seqlens^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // HLA_DIALECT_HLA_IR_HLAOPS_TD
