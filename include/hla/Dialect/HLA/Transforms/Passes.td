//===- Passes.td - hla transformation passes ---------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef HLA_DIALECT_HLA_TRANSFORMS_PASSES_TD
#define HLA_DIALECT_HLA_TRANSFORMS_PASSES_TD

include "hla/Dialect/HLA/PassOptions.td"
include "mlir/Pass/PassBase.td"

def HLAAddSummaryEntriesPass : Pass<"hla-add-summary-entries", "ModuleOp"> {
  let summary = "Add a function's segment summary and combine as entries";
  let description = [{
    The function `function` must return the output (and optionally the final
    state) of one attention op whose operands are its arguments. Two
    functions are added beside it, the pieces that split one sequence
    across devices (context parallelism):

    - `@<function>_summary`: the same arguments minus the initial state;
      returns every component of the monoid's total over the arguments'
      tokens, `[B, H, ...]` f32 (`[N, H, ...]`, one per packed sequence,
      with `cu_seqlens`; `hla.total` of the op's segments): what this span
      of tokens does to any state before it.
    - `@<function>_combine`: the carried components of a state (as the op's
      `initial_state`), then every component of a later span's total;
      returns the state after that span (the monoid's combine).

    Where the op's backward is derived (linear_attention, hla2, ahla,
    hla3), a third, `@<function>_combine_vjp`: a state, a later span's
    total and the cotangent of the state after that span; returns the
    state's cotangent (the transposed combine of the derived backward).

    A rank then runs the summary of its span, gathers the spans' totals,
    folds the totals of the spans before its own into its initial state
    with the combine, and runs `@<function>` from that state.

    ```mlir
    func.func @main(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>,
                    %v: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
      %o = hla.linear_attention %q, %k, %v {decay = 0.9 : f64} : ...
      return %o : tensor<1x8x2x4xf32>
    }
    // added:
    func.func @main_summary(%q: ..., %k: ..., %v: ...)
        -> (tensor<1x2x4x4xf32>, tensor<1x2xf32>) {
      %P, %rho = hla.segment #linear_attention (%k, %v) : ...
      %tP, %trho = hla.total #linear_attention (%P, %rho) : ...
      return %tP, %trho : ...
    }
    func.func @main_combine(%P: tensor<1x2x4x4xf32>,
                            %tP: tensor<1x2x4x4xf32>, %trho: tensor<1x2xf32>)
        -> tensor<1x2x4x4xf32>
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "The function whose summary and combine are added">,
  ];
  let dependentDialects = ["::mlir::hla::HLADialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HLADeriveVjpPass : Pass<"hla-derive-vjp", "ModuleOp"> {
  let summary = "Replace a function by its vector-Jacobian product";
  let description = [{
    The function `function` must return the output of one attention op
    (`hla.linear_attention`, `hla.hla2`, `hla.ahla`, `hla.hla3` or
    `hla.kda`) applied to distinct arguments (q, k, v; KDA's g and beta;
    a `head_decay` tensor; and the final state, from an initial state that
    is an argument too), without packed sequences. It is replaced,
    under the same name, by its backward: the arguments, then the
    cotangents of the output and of the final state, in; the gradient of
    every argument out, in argument order. The gradient is an
    `hla.prefix_vjp` under the op's monoid, which `hla-chunk` lowers with
    the backward derived from that monoid. With grouped K/V heads (H_kv <
    H_q, static shapes) every operand but q is repeated to the query heads
    (`linalg.broadcast`, `tensor.collapse_shape`) and their gradients summed
    over each group of H_q / H_kv heads in f32. A `head_decay` tensor is
    the prefix_vjp's `head_params` (checked at run time like hla-expand
    checks it) and gets the prefix_vjp's last gradient.

    Before:

    ```mlir
    func.func @main(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>,
                    %v: tensor<1x8x2x4xf32>) -> tensor<1x8x2x4xf32> {
      %o = hla.hla2 %q, %k, %v : (...) -> tensor<1x8x2x4xf32>
      return %o : tensor<1x8x2x4xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(%q: ..., %k: ..., %v: ..., %do: tensor<1x8x2x4xf32>)
        -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
      %dq, %dk, %dv = hla.prefix_vjp #hla2 (%q, %k, %v) cotangent(%do) ...
      return %dq, %dk, %dv : ...
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "The function to differentiate">,
  ];
  let dependentDialects = ["::mlir::hla::HLADialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

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
    finite state and is left as it is. `hla.random_features` becomes its
    constant matrix. A `head_decay` tensor becomes the monoid's per-head
    rate (`gamma = per_head`), given to `hla.segment`, after a run-time
    check that every rate lies in (0, 1] (`cf.assert`).

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
  let dependentDialects = ["::mlir::hla::HLADialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
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

def HLAChunkPass : Pass<"hla-chunk"> {
  let summary = "Rewrite token scans into the chunked masked-matmul form";
  let description = [{
    Rewrites every `hla.segment` -> inclusive `hla.scan` (axis 1) ->
    `hla.readout` chain into three phases over chunks of `chunk-size`
    tokens (the last chunk may be shorter):

    1. an `scf.forall` over (batch, chunk, head) computing every component's
       chunk summary from the chunk's tokens;
    2. an exclusive `hla.scan` over the chunk summaries, from the initial
       state: the state carried into every chunk, and the final state;
    3. an `scf.forall` over (batch, chunk, head) computing every readout at
       every position from the chunk's tokens and the carried state.

    The per-chunk math of phases 1 and 3 is derived from the monoid
    (ChunkPlan.h): index terms whose internal token indices are summed out by
    c x c matrix products with (decayed) triangular masks — for HLA2 the
    form `Q(S₀C₀ − G₀) + ((Q S₀ Qᵀ) ⊙ L) V + ((W Wᵀ) ⊙ L) V` of
    SEMANTICS.md §2, and its analogues for every other monoid with scalar
    decay. Monoids with matrix-valued transitions (KDA) are rejected.

    Before:

    ```mlir
    %s = hla.segment #m(%k, %v) : ... -> tensor<1x200x2x4x4xf32>
    %p = hla.scan #m(%s) : ... -> tensor<1x200x2x4x4xf32>
    %o = hla.readout #m(%q) state(%p) : ... -> tensor<1x200x2x4xf32>
    ```

    After (`chunk-size=64`, 4 chunks):

    ```mlir
    %sum = scf.forall (%b, %n, %h) in (1, 4, 2) shared_outs(...) { ... }
    %x0 = hla.scan exclusive #m(%sum) : ... -> tensor<1x4x2x4x4xf32>
    %o = scf.forall (%b, %n, %h) in (1, 4, 2) shared_outs(...) { ... }
    ```

    With `form=fused` the phases become one `scf.forall` over (sequence,
    head) whose body is an `scf.for` over the sequence's chunks: each chunk's
    readouts use the carried state, then its summary is combined into it
    (`hla.combine`). This is the schedule of a persistent GPU kernel that
    keeps the state on chip; it has no parallelism across chunks.

    With `form=segmented` (no packed sequences), each sequence is cut into
    `segments` runs of whole chunks: one `scf.forall` over (batch, segment,
    head) folds each run into its summary (every component, from the
    identity); a second one combines, per (batch, segment, head), the
    initial state with the summaries of the runs before it and runs the
    fused chunk loop over its own run; the final state is the last run's.
    About 1.5 times the work of the fused form, with `segments` times its
    parallelism — for few (batch, head) pairs and long sequences. With
    `segments=0` the count S minimises a model of the time with
    `parallelism` iterations running at once: ceil(B·H·S / parallelism)
    waves, each of 1/S of the sequence at 1.5 times the fused form's cost
    per chunk (S = 1: the fused form itself); at least two chunks per run.
    Where that is one run, or the sequences are packed, the fused form is
    emitted. hla.prefix_vjp's passes over chunks take runs too (the same
    count; docs/TRAINING.md).

    Value tiles (`value-tile=BV`, fused form): the value dimension (the
    output's columns, `dv`) is cut into tiles of BV columns and the loop runs
    over (sequence, head, value tile); each iteration reads its BV columns of
    the value input and carries its BV columns of every component that has
    them, and recomputes the components without them (hla2's S and m). This
    is exact when every term of the monoid's rules reads at most one slot
    with value columns and keeps them; the pass checks that. Smaller states
    per iteration and more iterations: what a GPU needs when the (sequence,
    head) pairs alone leave it idle. `value-tile=-1` chooses: the most tiles
    (a power of two, at least 32 columns each) whose iterations fit one wave
    of `parallelism`; and in the segmented form with its automatic count,
    such tiles instead of segments when they fill at least half a wave.

    Causal isolation: in masked-matmul form a row's output is a product
    with every token of its chunk, masked by zeros, and 0 · NaN = NaN — a
    non-finite input at token t would leak into the rows before t. With
    `causal-isolation` (the default) a chunk whose plain rows are not all
    finite (a spoiled row never is: the masks multiply, and 0 · NaN = NaN;
    LinSimp checks its token tiles instead) finds its first position f
    holding a non-finite token value (any input the readout reads) and, in
    an `scf.if`, reads the chunk out again as a chunk of f tokens (the
    tokens from f on zeroed) and takes rows [0, f) from that. The rows from
    f on are NaN (each depends on the token; the plain rows are not kept
    alive through the second readout) and the chunk's summary keeps the
    plain computation, so non-finite values still reach every output that
    depends on them. Other chunks pay one scan of their output rows.
  }];
  let options = [
    HLA_ChunkSizeOption,
    HLA_ModeOption<"form", "form", "ChunkForm", "Phased",
                   "phased (the three phases above), fused (one loop over a "
                   "sequence's chunks per sequence and head, carrying the "
                   "state) or segmented (fused loops over runs of chunks, "
                   "see above)">,
    Option<"segments", "segments", "int64_t", "0",
           "segmented: runs of chunks per sequence (0: from parallelism)">,
    Option<"parallelism", "parallelism", "int64_t", "132",
           "segmented: loop iterations to aim for (e.g. a GPU's SMs)">,
    Option<"stableFeatures", "stable-features", "bool", "true",
           "LinSimp: shift each query's anchor-feature exponents by their "
           "running maximum (cancels exactly; off to compare)">,
    Option<"anchorRows", "anchor-rows", "int64_t", "64",
           "LinSimp: readout rows of one pass over the anchor window; each "
           "pass stacks the most anchor offsets (a divisor of the window) "
           "whose chunk rows fit, so that its products have that many "
           "rows (at least one offset per pass)">,
    Option<"valueTile", "value-tile", "int64_t", "0",
           "Fused form: value columns per (sequence, head, tile) iteration "
           "(0: all of them; -1: auto, the most tiles of >= 32 columns that "
           "fit one wave of parallelism); components without value columns "
           "are recomputed per tile. hla.prefix_vjp: the same for its passes "
           "over chunks that keep value columns apart (auto: >= 16 columns; "
           "see docs/TRAINING.md)">,
    Option<"causalIsolation", "causal-isolation", "bool", "true",
           "Keep a chunk's rows before its first non-finite token finite: "
           "such a chunk's rows are read out a second time with the tokens "
           "from there on zeroed (see below)">,
    Option<"parallelGradients", "parallel-gradients", "bool", "false",
           "hla.prefix_vjp: the reverse pass carries only λ, saving it per "
           "chunk, and the tokens' gradients are a third pass, parallel "
           "over (sequence, head, chunk)">,
    Option<"splitGradients", "split-gradients", "bool", "false",
           "hla.prefix_vjp with parallel gradients: that third pass as one "
           "pass per input's gradient, each recomputing the chunk's summary "
           "and transposed combine but holding fewer tiles at once">,
    Option<"bf16Products", "bf16-products", "bool", "false",
           "The target rounds the operands of matrix products to bf16 for "
           "ops whose inputs are 16-bit floats (tensor cores): products "
           "whose results cancel (LinSimp's backward, the features' "
           "cotangents) are split into products of bf16-exact parts">
  ];
  let dependentDialects = [
    "::mlir::hla::HLADialect", "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def HLALowerLinSimpExactPass : Pass<"hla-lower-linsimp-exact"> {
  let summary = "Lower LinSimp's exact kernel to chunked online-softmax loops";
  let description = [{
    `hla.linsimp` with `kernel = exact` has no finite prefix state, so
    hla-chunk has nothing to scan; this pass lowers it directly. One
    `scf.forall` over (batch, query chunk, head): per anchor offset of the
    window, a loop over the key chunks up to the query's scores the keys
    against τ (q ⊙ r) with a running maximum and rescaled sums (the online
    softmax over a query's (key, anchor) pairs), masking later tokens inside
    the contraction; the rows are num / den. No packed sequences or state.
  }];
  let options = [HLA_ChunkSizeOption];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def HLALowerScansPass : Pass<"hla-lower-scans"> {
  let summary = "Lower hla.scan to loops of hla.combine";
  let description = [{
    Rewrites every `hla.scan` into loops over its axis whose bodies combine
    slices with `hla.combine`, keeping only the carried components in the
    carry and the prefixes. `schedule=sequential` folds the elements in
    order (one carry, N combines); `schedule=blelloch` runs the
    work-efficient up-sweep and down-sweep over a power-of-two padded array
    (about 2N combines in 2 log2 N levels of `scf.forall`); `schedule=auto`
    picks Blelloch when the other axes hold fewer independent scans than
    `scan-threads` and the axis is long. Both give the same results up to
    rounding.

    ```mlir
    %x = hla.scan exclusive #m(%sums) : (tensor<1x4x2x4x4xf32>) -> ...
    // sequential:
    %x = scf.for %i = %c0 to %c4 step %c1 iter_args(%carry = %zero, ...) {
      %seg = tensor.extract_slice %sums[0, %i, 0, 0, 0] ...
      %next = hla.combine #m(%carry), (%seg) : ...
      ...
    }
    ```
  }];
  let options = [
    HLA_ModeOption<"schedule", "schedule", "ScanSchedule", "Auto",
                   "sequential, blelloch or auto">,
    Option<"scanThreads", "scan-threads", "int64_t", "2",
           "Worker threads the auto schedule assumes">
  ];
  let dependentDialects = [
    "::mlir::hla::HLADialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def HLAVerifyLoweredPass : Pass<"hla-verify-lowered"> {
  let summary = "Check that no hla op is left after the hla-level lowering";
  let description = [{
    A phase-boundary check of the code-generation pipelines: after
    hla-expand, hla-chunk, hla-lower-scans and convert-hla-to-linalg, the IR
    must be plain upstream tensor code. Any hla op left (an attention op
    without a monoid, an algebra op outside a segment/scan/readout chain) is
    reported with the reason the lowering could not take it.
  }];
}

def HLARecordSignaturesPass : Pass<"hla-record-signatures", "::mlir::ModuleOp"> {
  let summary = "Record the tensor signature of every public function";
  let description = [{
    Before bufferization forgets it, records each public function's tensor
    signature as a module attribute `hla.signatures = {name = "..."}` in the
    form `name|dtype:d0xd1,...|dtype:...` (dtype f32, f16, bf16, f64, i32,
    i64). hla-emit-entry-abi builds the artefacts' C ABI from it. Functions
    with dynamic shapes or non-tensor arguments are reported as errors when
    `strict` is set (executables need static shapes). The tensor arguments
    of public functions are marked `bufferization.writable = false`: in the
    ABI the caller owns the input buffers, so bufferization must not place
    results in them.
  }];
  let options = [
    Option<"strict", "strict", "bool", "false",
           "Fail on public functions without a static tensor signature">
  ];
}

def HLAEmitEntryABIPass : Pass<"hla-emit-entry-abi", "::mlir::ModuleOp"> {
  let summary = "Emit the C ABI of compiled entry functions";
  let description = [{
    Runs on the LLVM dialect, after function lowering. For every function
    recorded by hla-record-signatures (with its results already turned into
    out-parameters) it emits

    ```c
    int32_t hla_<name>(void *const *inputs, void *const *outputs);
    const char hla_<name>_signature[];
    ```

    where `inputs` and `outputs` point to dense row-major buffers, and with
    `entry=<name>` also `hla_entry` / `hla_entry_signature` for that
    function (what an executable's main calls). An internal
    `__hla_call_<name>` unpacks the buffers into memref descriptors and
    calls the function; `hla_<name>` runs it through the runtime's
    `hla_runtime_call` and returns its status: 0, or non-zero when a
    run-time check or driver call failed (`hla_last_error()` has the
    message).

    ```mlir
    llvm.func @hla_main(%in: !llvm.ptr, %out: !llvm.ptr) -> i32 {
      %body = llvm.mlir.addressof @__hla_call_main : !llvm.ptr
      %status = llvm.call @hla_runtime_call(%body, %in, %out)
          : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
      llvm.return %status : i32
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"\"",
           "Function to export as hla_entry (executables)">
  ];
}

def HLALowerAssertsPass : Pass<"hla-lower-asserts", "::mlir::ModuleOp"> {
  let summary = "Turn cf.assert into a call of the artefact runtime's hla_abort";
  let description = [{
    Run-time checks of generated code (such as the order of `cu_seqlens`)
    are `cf.assert`s. Upstream lowers them to `abort()` after writing the
    message to buffered stdout, where it is lost. This pass (after
    `convert-scf-to-cf`) branches to a call of `void hla_abort(const char *)`
    instead, which the runtime defines: it ends the running entry call
    (`hla_runtime_call` unwinds to it with longjmp) so that the entry returns
    non-zero and `hla_last_error()` returns the message. An executable's
    main prints it as `error: <message>` and exits with status 2. A check
    that fails inside an OpenMP region (or on a worker thread) cannot be
    unwound: there the runtime prints the message and exits with status 2.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def HLAVectorizeTilesPass : Pass<"hla-vectorize-tiles"> {
  let summary = "Tile linalg ops into register tiles and vectorise them";
  let description = [{
    Contractions (C += A·B over one reduction index, any layout and batch
    dimensions) become loops over register tiles of at most 8 rows by
    `vector-lanes` columns whose accumulator vector is carried through the
    reduction, one `vector.outerproduct` (fused multiply-adds) per step.
    Every other statically shaped linalg op is tiled into rows of at most
    4 x `vector-lanes` contiguous elements, its reduction dimensions into
    steps of 8 (accumulating into the output), and vectorised. Tile sizes divide
    the dimensions, so tiles are static; ops the vectoriser refuses keep
    their scalar form.

    ```mlir
    %c = linalg.generic {... ["parallel", "reduction", "parallel"]}
           ins(%a, %b : tensor<64x64xf32>, tensor<64x32xf32>) ...
    // becomes, per 8 x 16 tile of C,
    %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%a = %c_tile) {
      %col = vector.transfer_read %a_op[%i, %k] ... : vector<8xf32>
      %row = vector.transfer_read %b_op[%k, %j] ... : vector<16xf32>
      %n = vector.outerproduct %col, %row, %a : vector<8xf32>, vector<16xf32>
      scf.yield %n : vector<8x16xf32>
    }
    ```
  }];
  let options = [
    Option<"vectorLanes", "vector-lanes", "int64_t", "16",
           "f32 lanes of the target's vectors (16 for AVX-512)">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::vector::VectorDialect"
  ];
}

def HLAFuseTileElementwisePass : Pass<"hla-fuse-tile-elementwise"> {
  let summary = "Fuse chains of elementwise tile ops into one";
  let description = [{
    Fuses an elementwise linalg.generic on tensors into the elementwise
    generic that consumes it (masks, decays, scalings, casts of the chunk
    math become one op per chain). Only consumers whose loops are all
    parallel take producers, so contractions keep their plain `C += A·B`
    form for the tensor-core lowering. Fewer ops mean fewer passes over
    shared memory, fewer barriers and fewer temporary tiles on the GPU.

    An elementwise generic's output made by a linalg.fill is read as the
    fill's scalar (each element is written once, from its initial value):
    otherwise upstream's fusion keeps a producer whose body reads its
    output as a result of the fused op, a whole tile nobody reads (KDA's
    backward: 14 results of one generic, 13 of them dead, 448 fragment
    registers a thread to the register tiles' count).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def HLAAccumulateTileProductsPass : Pass<"hla-accumulate-tile-products"> {
  let summary = "Start a product added in a sum from the rest of the sum";
  let description = [{
    A chunk body's gradient tile is a sum of products (hla2's dQ: four),
    which, each computed from zero and kept until the sum, are alive at
    once: on register tiles a 64 x 64 f32 fragment is 32 registers per
    thread, and four of them next to the body's other fragments spill. This
    pass rewrites an elementwise linalg.generic whose body yields a sum (or
    the sum truncated) with a product term: the term's contraction, which
    only this generic reads and which starts from a zero fill, starts instead
    from the rest of the sum, computed by the generic without that term;
    the truncation, if any, follows as a generic of its own. Repeated, a
    sum of products becomes one chain of accumulations into one tile
    (wgmma's `D = A·B + D`). Only products read in the output's order and
    terms added with coefficient one are taken. A sum of two products
    inside a longer expression (LinSimp's `acc + u ⊙ (F·S + P·V)`), one of
    them such a product, is taken too: it starts from the other product and
    the generic reads it in place of the sum.

    ```mlir
    %p = linalg.generic {A·B} ins(%a, %b) outs(%zero)
    %s = linalg.generic {x + y} ins(%x, %p) outs(%empty)
    // becomes
    %s = linalg.generic {A·B} ins(%a, %b) outs(%x)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HLAHoistChunkWorkPass : Pass<"hla-hoist-chunk-work"> {
  let summary = "Move a chunk loop's work that does not read the carried "
                "state, or its output rows, into a pass parallel over chunks";
  let description = [{
    A fused chunk loop (`scf.forall` over sequences and heads holding one
    `scf.for` over chunks that carries the state) runs all of a chunk's
    work in sequence, chunk after chunk, although much of it does not read
    the carried state: KDA's cumulative decay, pair products, triangular
    solve, W and U are 21 of its 25 products per chunk. This pass moves
    that work out: the ops of the loop body that the carried values do not
    reach and whose slice holds a reduction are cloned into a new
    `scf.forall` over (the sequences and heads, the chunks), which writes
    each value the loop still reads into a stack, a 2-D tile's rows at
    `[sequence and head indices..., chunk · rows, 0]` of
    `[..., chunks · rows, cols]`, a vector at `[..., chunk, 0]` of
    `[..., chunks, n]`; the loop reads
    the chunk's rows of the stack instead. What the state does not reach
    but costs no reduction (token rows, masks, index arithmetic) stays in
    the loop. A loop is split only when at least `min-products` reductions
    move and
    at least twice as many move as stay (the sequential part is then a
    third of the loop's products or less). With `bf16-operands`, a tile that only
    contractions read (as inputs) is stacked in bf16, as tensor cores would
    read it anyway; otherwise stacks keep the tile's type. The values are
    those the loop computed, rows past a sequence's end included.

    ```mlir
    scf.forall (%b, %h) in (B, H) {
      scf.for %c = 0 to N iter_args(%s = %s0) {
        %w = <work not reading %s>
        %y = <work reading %s and %w>
      }
    }
    // becomes
    %stack = scf.forall (%b, %h, %c) in (B, H, N) shared_outs(%t = %e) {
      %w = <work not reading %s>
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %w into %t[%b, %h, %c * R, 0] ...
      }
    }
    scf.forall (%b, %h) in (B, H) {
      scf.for %c = 0 to N iter_args(%s = %s0) {
        %w = tensor.extract_slice %stack[%b, %h, %c * R, 0] ...
        %y = <work reading %s and %w>
      }
    }
    ```

    A loop that does not split so may split the other way: where its output
    rows run at least twice `min-products` reductions per chunk (a nested
    loop's body counted once per iteration, a branch's cheaper side: causal
    isolation's second readout runs only for non-finite tokens) and four
    times as many as its state
    (LinSimp's anchor window: W / G passes of four products, against two
    for the state), the loop keeps only the state, writing the state
    entering each chunk into stacks laid out as above, and a new
    `scf.forall` over (the sequences and heads, the chunks) after it
    computes each chunk's rows from its stacked state and writes them into
    the output. The loop's other results (final states) stay its forall's.
  }];
  let options = [
    Option<"minProducts", "min-products", "int64_t", "8",
           "Split a loop only when at least this many reductions move out">,
    Option<"bf16Operands", "bf16-operands", "bool", "false",
           "Stack tiles read only by contractions in bf16">,
    Option<"report", "report", "bool", "false",
           "Remark on each loop split: reductions moved and staying, tiles "
           "stacked">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HLAFissionChunkPassesPass : Pass<"hla-fission-chunk-passes"> {
  let summary = "Split a pass parallel over chunks into passes whose live "
                "tiles fit a budget, the tiles between them in device memory";
  let description = [{
    A pass parallel over chunks (`scf.forall` over the sequences and heads
    and, last, the chunks, with no loop inside: the derived backward's
    gradients, hla-hoist-chunk-work's passes) runs all of a chunk's work in
    one thread block. When the tiles alive at once outgrow the registers
    (KDA's gradients: the reverse program keeps the forward tiles that its
    uses of Γ need), the kernel spills. This pass cuts the body's
    straight-line ops, in order, into stages whose live tiles stay within
    `max-live-bytes`, counting a tile alive from its definition (or its
    first use, for a tile an earlier stage wrote) to its last use in the
    stage, or to the stage's end where a later stage reads it. Each stage
    becomes an `scf.forall` over the same indices; a tile a later stage
    reads goes into a stack laid out as hla-hoist-chunk-work's (a 2-D
    tile's rows at `[indices..., chunk · rows, 0]` of
    `[..., chunks · rows, cols]`, a vector at `[..., chunk, 0]`), in f32,
    or in bf16 with `bf16-operands` where later stages read it only as a
    contraction's input; the later stage reads it back. Ops that reduce
    nothing and read only token rows, constants and indices (token tiles,
    masks, widenings) are recomputed by each stage that needs them rather
    than stored. An output's rows are written by the stage that computes
    them.

    ```mlir
    scf.forall (%p, %c) in (P, N) shared_outs(%o = %e) {
      %a = <products of tokens>
      %b = <products of %a>
      %y = <products of %a and %b>
      scf.forall.in_parallel { tensor.parallel_insert_slice %y into %o ... }
    }
    // becomes (cut after %b)
    %s:2 = scf.forall (%p, %c) in (P, N) shared_outs(%sa = %ea, %sb = %eb) {
      %a = ... ; %b = ...
      scf.forall.in_parallel { <%a, %b into their stacks> }
    }
    scf.forall (%p, %c) in (P, N) shared_outs(%o = %e) {
      %a = tensor.extract_slice %s#0[%p, %c * R, 0] ...
      %b = tensor.extract_slice %s#1[%p, %c * R, 0] ...
      %y = <products of %a and %b>
      scf.forall.in_parallel { tensor.parallel_insert_slice %y into %o ... }
    }
    ```

    A forall whose body has other ops with regions than linalg's, reads
    its shared outputs, or would pass a tile of another element type than
    f32 and bf16, or of rank above 2, between stages is left as it is.
  }];
  let options = [
    Option<"maxLiveBytes", "max-live-bytes", "int64_t", "65536",
           "Bytes of tiles alive at once in a stage (a 64 x 64 f32 tile is "
           "16,384)">,
    Option<"bf16Operands", "bf16-operands", "bool", "false",
           "Stack tiles that later stages read only as contractions' "
           "inputs in bf16">,
    Option<"report", "report", "bool", "false",
           "Remark on each pass split: stages, their products and live "
           "bytes, tiles stacked">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HLASplitTileSumsPass : Pass<"hla-split-tile-sums"> {
  let summary = "Add the terms of a tile sum one at a time";
  let description = [{
    Elementwise fusion makes one linalg.generic of a sum of many terms (the
    backward of hla2 sums eight per gradient tile, each from a product
    scaled or masked on its way in), so every term's product is alive until
    that one op reads them all: on register tiles each 64 x 64 f32 product
    is 32 registers per thread of a warpgroup, and the reverse pass of
    hla2's backward needed 400 per thread of two warpgroups and spilled.
    This pass takes from an elementwise generic whose body yields a sum (or
    the sum truncated) of three or more terms its last term that reads a
    product (a contraction's result) and is computed by ops of its own: the
    generic becomes a generic computing the rest of the sum (reading only
    the inputs the rest needs) and a generic adding the term to it (then
    truncating). Repeated, the sum becomes a chain of additions, which the
    register tiles' order can interleave with the products (adding each as
    it is computed). The sum's order of additions changes (f32 rounding).

    ```mlir
    %s = linalg.generic {x + c * p + q * m} ins(%x, %p, %q, %m) outs(%empty)
    // becomes
    %r = linalg.generic {x + c * p} ins(%x, %p) outs(%empty2)
    %s = linalg.generic {r + q * m} ins(%r, %q, %m) outs(%empty)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HLAShareTileProductsPass : Pass<"hla-share-tile-products"> {
  let summary = "Fold tile transposes into their readers and compute each "
                "product once";
  let description = [{
    The chunk plan emits every index term on its own (ChunkTerms.cpp), so a
    chunk body computes the same products several times: Q·Kᵀ for one term
    and K·Qᵀ for another, Q·S₀ for two readouts, the same masked Gram
    matrix in a summary and a readout. On linalg.generic ops with pure
    tensor semantics this pass

    1. folds a transpose (a generic that only permutes its input) into
       every generic reading it, by composing the indexing maps; and
    2. replaces a generic by an earlier one that dominates it and computes
       the same values, up to a renaming of the loops, the order of a
       commutative body's inputs, and a transpose of the result. Ops that
       accumulate into their output must start from equal fills. A
       transposed match becomes a transpose of the earlier result, which
       step 1 folds into its readers. A product from a zero fill matches
       an earlier one of the same chain of factors, however either's
       products are associated: (G·Aᵀ)·Qᵀ is Q·(A·Gᵀ) transposed, and
       (Q·A)·Gᵀ with it (the backward's terms associate their chains
       differently; hla3's gradient pass loses 9 of 66 products).

    ```mlir
    %a = linalg.generic {Q·Kᵀ} ins(%q, %k) outs(%zero0)
    %b = linalg.generic {K·Qᵀ} ins(%k, %q) outs(%zero1)
    %c = linalg.generic {x · y} ins(%b, %v) ...
    // becomes
    %a = linalg.generic {Q·Kᵀ} ins(%q, %k) outs(%zero0)
    %c = linalg.generic {x · y, reading %a transposed} ins(%a, %v) ...
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HLAReportChunkWorkPass : Pass<"hla-report-chunk-work"> {
  let summary = "Count the products and FLOPs of every chunk body";
  let description = [{
    Emits one remark per chunk body (the outermost `scf.for` in an
    `scf.forall`, or the forall's body where there is no such loop) after
    the chunk math is linalg on tensors: its contractions and their FLOPs,
    matrix-vector products and other reductions, and elementwise ops.
    Work inside conditional regions (causal isolation's repair of poisoned
    chunks) and nested loops (the delta rule's substitution) is counted
    apart, per execution of the region. The counts are static and exact for
    straight-line bodies. `bench/RESULTS.md` quotes them.

    ```
    remark: hla-report-chunk-work: 4 contractions (2097152 FLOP), 0
            matrix-vector products, 1 other reductions, 10 elementwise ops
            per chunk; in conditional regions: ...
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif // HLA_DIALECT_HLA_TRANSFORMS_PASSES_TD
