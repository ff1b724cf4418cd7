"""The CUDA execution test matrix: which graphs to compile, with what inputs.

Shared by build_cases.py (here, where hla-opt runs) and run_cases.py (on the
GPU machine, where only the compiled artefacts, numpy and torch exist).
Every case is one attention op in a `func.func @main`; its entry is
`hla_main(void **inputs, void **outputs)` taking device pointers.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python", "tests"))
from codegen_util import OPTION_CASES  # noqa: E402  (the CPU tests' option sets)

OPS = ["linear_attention", "hla2", "ahla", "hla3"]


def case(name, op, T, *, options=None, chunk=64, B=2, hq=2, hkv=2, d=16, dv=16,
         dtype="f32", tol=1e-4, state=False, cu_seqlens=None, positive=False,
         schedule="auto", segments=0, m=0, window=0, mma="auto", misaligned=False,
         poison=False, value_tile=0, generator="auto", flags=(), zero_decays=(),
         head_decay=False):
    return dict(name=name, op=op, T=T, options=dict(options or {}), chunk=chunk, mma=mma,
                head_decay=head_decay,
                value_tile=value_tile, generator=generator, flags=list(flags),
                misaligned=misaligned, poison=poison, zero_decays=list(zero_decays),
                B=B, hq=hq, hkv=hkv, d=d, dv=dv, dtype=dtype, tol=tol, state=state,
                cu_seqlens=list(cu_seqlens) if cu_seqlens else None,
                positive=positive, schedule=schedule, segments=segments, m=m,
                window=window)


def linsimp_cases():
    """LinSimp (favor): Ω is an input (hla.random_features of the case's m
    and d, seed 1); small-norm q, k, r (SEMANTICS.md §5)."""
    cases = []
    for T in [1, 17, 100]:
        for chunk in [8, 16]:
            for window in [4, 20]:
                cases.append(case(f"linsimp-T{T}-c{chunk}-W{window}", "linsimp", T,
                                  chunk=chunk, hq=2, hkv=1, d=16, dv=16, m=32,
                                  window=window))
    for schedule, segments in [("persistent", 0), ("segmented", 3)]:
        cases.append(case(f"linsimp-state-{schedule}", "linsimp", 90, chunk=8, B=2,
                          hq=4, hkv=2, d=16, dv=8, m=32, window=6, state=True,
                          schedule=schedule, segments=segments))
    cases.append(case("linsimp-packed", "linsimp", 60, chunk=8, B=1, hq=2, hkv=1, d=8,
                      dv=4, m=16, window=6, state=True, cu_seqlens=[0, 3, 3, 40, 60]))
    for T in [1, 40]:
        cases.append(case(f"linsimp-exact-T{T}", "linsimp", T, chunk=16, hq=2, hkv=1,
                          d=16, dv=16, m=32, window=8, options=dict(kernel="exact")))
    # Stacked anchor passes (issue 13): chunks larger than 16, m in {16, 64,
    # 256}, W in {1, 16, 64}, the anchor rows per pass varied (64 by default:
    # G = 64 / c offsets per pass where they divide W).
    for m, window, chunk, rows in [(16, 1, 32, 64), (64, 16, 32, 64), (64, 64, 16, 64),
                                   (256, 64, 64, 64), (64, 16, 64, 64), (256, 16, 16, 32),
                                   (64, 64, 16, 16)]:
        cases.append(case(f"linsimp-bf16-m{m}-W{window}-c{chunk}-r{rows}", "linsimp", 150,
                          chunk=chunk, B=1, hq=2, hkv=2, d=64, dv=64, m=m, window=window,
                          dtype="bf16", tol=1e-2, flags=[f"--linsimp-anchor-rows={rows}"]))
    cases.append(case("linsimp-c32-W16-segmented", "linsimp", 130, chunk=32, B=2, hq=2,
                      hkv=1, d=16, dv=8, m=64, window=16, state=True, schedule="segmented",
                      segments=2))
    # The anchor window on register tiles (issue 13): the persistent loop
    # keeps M and a and stacks them per chunk, a pass parallel over chunks
    # computes the rows (--hoist-chunk-work; W = 1 is too little to move).
    for T, window, m, state, stable in [(1, 16, 64, False, True), (65, 1, 64, False, True),
                                        (150, 16, 64, True, True), (300, 64, 64, False, True),
                                        (130, 20, 64, False, False), (200, 64, 256, False, True)]:
        flags = ["--hoist-chunk-work=on", "--linsimp-anchor-rows=64", "--cuda-allow-spills=true"]
        flags += [] if stable else ["--linsimp-stable-features=0"]
        cases.append(case(f"linsimp-tiles-T{T}-W{window}-m{m}" + ("" if stable else "-plain"),
                          "linsimp", T, chunk=64, B=2, hq=2, hkv=1, d=64, dv=64, m=m,
                          window=window, dtype="bf16", tol=1e-2, state=state,
                          schedule="persistent", flags=flags))
    # Causal isolation on register tiles: the rows' output checked, the
    # branch reading the keys, query and anchors again (two blocks an SM).
    cases.append(case("linsimp-tiles-poison", "linsimp", 200, chunk=64, B=2, hq=2, hkv=1,
                      d=64, dv=64, m=64, window=16, dtype="bf16", tol=1e-2, poison=True,
                      schedule="persistent",
                      flags=["--hoist-chunk-work=on", "--linsimp-anchor-rows=64",
                             "--cuda-allow-spills=true"]))
    # The seed model's layer shape: d = 64, m = 256, W = 64, bf16.
    cases.append(case("linsimp-bf16", "linsimp", 300, chunk=16, B=1, hq=2, hkv=2,
                      d=64, dv=64, m=256, window=64, dtype="bf16", tol=1e-2))
    return cases


def all_cases():
    """The default schedule (auto) is the segmented one for these few
    (sequence, head) pairs, the persistent one for packed sequences; the
    `-persistent` and `-seg*` cases pin each."""
    cases = []
    for op in OPS:
        # Ragged tails, a single token, two chunk sizes.
        for T in [1, 63, 64, 65, 200, 1000]:
            for chunk in [16, 64]:
                cases.append(case(f"{op}-T{T}-c{chunk}", op, T, chunk=chunk))
        for i, options in enumerate(OPTION_CASES[op]):
            cases.append(case(f"{op}-options{i}", op, 200, options=options, chunk=16,
                              positive=bool(options.get("normalize"))))
        cases.append(case(f"{op}-grouped", op, 100, options=dict(decay=0.95),
                          chunk=16, hq=4, hkv=2))
        cases.append(case(f"{op}-state", op, 90, options=dict(decay=0.9),
                          chunk=16, hq=4, hkv=2, state=True))
        # One chunk: a compile-time decay of the whole sequence.
        cases.append(case(f"{op}-one-chunk-state", op, 37, options=dict(decay=0.9),
                          chunk=64, state=True))
        cases.append(case(f"{op}-packed", op, 150, options=dict(decay=0.93),
                          chunk=16, B=1, hkv=1, state=True,
                          cu_seqlens=[0, 1, 1, 70, 150]))
        # One sequence of one head: a chunk loop of one iteration.
        cases.append(case(f"{op}-one-head", op, 100, B=1, hq=1, hkv=1, chunk=16))
        # Packed on tensor cores (bf16, d = 64: wgmma), the offsets checked
        # outside the kernels.
        cases.append(case(f"{op}-packed-bf16", op, 300, B=1, d=64, dv=64, dtype="bf16",
                          tol=1e-2, chunk=32 if op == "hla3" else 64, state=True,
                          cu_seqlens=[0, 1, 1, 170, 300]))
        # Half-precision inputs at a model-like head size (hla3's chunk state
        # and tiles at c = 64, d = 64 exceed a thread block's shared memory).
        half_chunk = 32 if op == "hla3" else 64
        cases.append(case(f"{op}-bf16", op, 300, B=1, d=64, dv=64, dtype="bf16",
                          tol=1e-2, chunk=half_chunk))
        cases.append(case(f"{op}-f16", op, 300, B=1, d=64, dv=64, dtype="f16",
                          tol=1e-2, chunk=half_chunk))
        # Tensor cores: wgmma (the sm_90a default) with ragged tails and a
        # single token, and the mma.sync path pinned.
        for T in [1, 65]:
            cases.append(case(f"{op}-bf16-T{T}", op, T, B=2, d=64, dv=64,
                              dtype="bf16", tol=1e-2, chunk=half_chunk))
        cases.append(case(f"{op}-bf16-mmasync", op, 300, B=1, d=64, dv=64,
                          dtype="bf16", tol=1e-2, chunk=half_chunk, mma="mma.sync"))
        # The persistent schedule pinned (one block per sequence and head),
        # and segment counts pinned (one segment is the persistent form).
        for T in [1, 65, 1000]:
            cases.append(case(f"{op}-T{T}-persistent", op, T, chunk=16,
                              schedule="persistent"))
        cases.append(case(f"{op}-state-persistent", op, 90, options=dict(decay=0.9),
                          chunk=16, hq=4, hkv=2, state=True, schedule="persistent"))
        cases.append(case(f"{op}-bf16-persistent", op, 300, B=1, d=64, dv=64,
                          dtype="bf16", tol=1e-2, chunk=half_chunk,
                          schedule="persistent"))
        for segments in [2, 7]:
            cases.append(case(f"{op}-state-seg{segments}", op, 200,
                              options=dict(decay=0.95, normalize=True), chunk=16,
                              hq=4, hkv=2, state=True, positive=True,
                              schedule="segmented", segments=segments))
    # Options, grouped heads and state on tensor cores.
    cases.append(case("hla2-bf16-options-state", "hla2", 300, B=2, hq=4, hkv=2, d=64,
                      dv=64, dtype="bf16", tol=1e-2, state=True, positive=True,
                      options=dict(decay=0.95, normalize=True)))
    # Inputs TMA cannot address (not 16-byte aligned): the threads' copies.
    cases.append(case("hla2-bf16-misaligned", "hla2", 200, B=2, d=64, dv=64,
                      dtype="bf16", tol=1e-2, schedule="persistent", misaligned=True))
    cases.append(case("hla2-f32-misaligned", "hla2", 100, chunk=16, misaligned=True,
                      options=dict(decay=0.9)))
    # A larger case of the main op.
    cases.append(case("hla2-bf16-large", "hla2", 2048, B=2, hq=4, hkv=4, d=64, dv=64,
                      dtype="bf16", tol=1e-2))
    # d = 128: the state does not fit in shared memory and lives in a
    # device-memory scratch buffer; both schedules.
    for schedule in ["persistent", "segmented"]:
        cases.append(case(f"hla2-d128-bf16-{schedule}", "hla2", 300, B=1, d=128, dv=128,
                          dtype="bf16", tol=1e-2, chunk=32, schedule=schedule,
                          segments=3 if schedule == "segmented" else 0))
    cases.append(case("hla2-d128-f32-state", "hla2", 70, B=1, d=128, dv=128, chunk=16,
                      options=dict(decay=0.9), state=True))
    return (cases + linsimp_cases() + kda_cases() + poison_cases() + value_tile_cases()
            + register_tile_cases() + head_decay_cases())


def head_decay_cases():
    """A decay rate per query head (`head_decay`, a run-time tensor): on the
    shared-memory phases (a chunk size given), with state, packed, bf16;
    on register tiles pinned as register_tile_cases pins the constant
    decay's (isolation off, value tiles for hla2 and ahla), persistent and
    segmented, poisoned tokens where isolation is on."""
    cases = []
    for op in OPS:
        cases.append(case(f"{op}-head-decay-state", op, 90, chunk=16, hq=4, hkv=2,
                          state=True, head_decay=True))
        cases.append(case(f"{op}-head-decay-packed", op, 150, chunk=16, B=1, hkv=1,
                          state=True, cu_seqlens=[0, 1, 1, 70, 150], head_decay=True))
        cases.append(case(f"{op}-head-decay-bf16", op, 300, B=2, hq=4, hkv=2, d=64,
                          dv=64, dtype="bf16", tol=1e-2, chunk=32 if op == "hla3" else 64,
                          head_decay=True, options=dict(normalize=True), positive=True))
    tiles = dict(dtype="bf16", tol=1e-2, chunk=64, d=64, dv=64, schedule="persistent",
                 generator="tiles", head_decay=True)
    off = ["--causal-isolation=false"]
    cases.append(case("linear_attention-tiles-head-decay", "linear_attention", 300, B=2,
                      hq=4, hkv=2, options=dict(scale=0.5), **tiles))
    cases.append(case("linear_attention-tiles-head-decay-poison", "linear_attention", 200,
                      B=2, hq=2, poison=True, **tiles))
    for op, width in [("hla2", 16), ("ahla", 32)]:
        cases.append(case(f"{op}-tiles-vt{width}-head-decay", op, 150, B=1, hq=4, hkv=2,
                          value_tile=width, flags=off, **tiles))
    seg = dict(tiles, schedule="segmented")
    cases.append(case("linear_attention-tiles-seg3-head-decay", "linear_attention", 400,
                      B=1, hq=4, hkv=2, segments=3, **seg))
    cases.append(case("ahla-tiles-seg3-head-decay", "ahla", 300, B=1, hq=4, hkv=2,
                      segments=3, flags=off, **seg))
    return cases


def register_tile_cases():
    """hla-gpu-lower-register-tiles pinned (--cuda-generator=tiles: every
    chunk loop in registers or the compile fails): bf16, 64-token chunks,
    one block of one or two warpgroups per (sequence, head, value tile);
    ragged tails, a single token, grouped heads, decay and scale, value
    tiles; causal isolation on (the default: poisoned tokens checked) and
    off; linear attention and the three higher orders."""
    cases = []
    tiles = dict(dtype="bf16", tol=1e-2, chunk=64, d=64, dv=64, schedule="persistent",
                 generator="tiles")
    off = ["--causal-isolation=false"]
    for T in [1, 63, 64, 65, 200, 1000]:
        for B in [1, 2]:
            cases.append(case(f"linear_attention-tiles-T{T}-B{B}", "linear_attention", T,
                              B=B, **tiles))
            cases.append(case(f"linear_attention-tiles-T{T}-B{B}-noiso", "linear_attention",
                              T, B=B, flags=off, **tiles))
    cases.append(case("linear_attention-tiles-grouped", "linear_attention", 300, B=2,
                      hq=4, hkv=2, options=dict(decay=0.95, scale=0.5), **tiles))
    cases.append(case("linear_attention-tiles-vt32", "linear_attention", 200, B=1,
                      options=dict(decay=0.9), value_tile=32, flags=off, **tiles))
    cases.append(case("linear_attention-tiles-poison", "linear_attention", 200, B=2,
                      options=dict(decay=0.95), poison=True, **tiles))
    cases.append(case("linear_attention-tiles-poison-nodecay", "linear_attention", 150,
                      B=1, poison=True, **tiles))
    # Two warpgroups per block, each with half of every fragment's columns
    # (auto picks them for the higher orders; pinned here for linear
    # attention, which auto runs on one).
    two = ["--cuda-warpgroups=2"]
    for T in [1, 65, 200]:
        cases.append(case(f"linear_attention-tiles-wg2-T{T}", "linear_attention", T, B=2,
                          flags=two, **tiles))
    cases.append(case("linear_attention-tiles-wg2-options", "linear_attention", 300, B=1,
                      hq=4, hkv=2, options=dict(decay=0.95, scale=0.5), flags=two + off,
                      **tiles))
    cases.append(case("linear_attention-tiles-wg2-poison", "linear_attention", 200, B=2,
                      options=dict(decay=0.95), poison=True, flags=two, **tiles))
    cases.append(case("linear_attention-tiles-wg2-vt16", "linear_attention", 100, B=1,
                      value_tile=16, flags=two + off, **tiles))
    # The higher orders: their transposed reads of QKᵀ become products of
    # KQᵀ, the body is ordered for register pressure, and two warpgroups
    # share each fragment. Isolation off at full value width; with
    # isolation (more fragments alive) at value tiles of 32 or 16 columns.
    for op in ["hla2", "ahla", "hla3"]:
        wide = ["--value-tile=0"] if op != "hla3" else ["--value-tile=16"]
        for T in [1, 63, 65, 300]:
            cases.append(case(f"{op}-tiles-T{T}-noiso", op, T, B=2, flags=off + wide,
                              **tiles))
        # With isolation: hla2 and ahla at full width (the repair's second
        # readout does not hold the plain rows), all three at 32 columns.
        if op != "hla3":
            cases.append(case(f"{op}-tiles-T200", op, 200, B=2, flags=wide, **tiles))
            cases.append(case(f"{op}-tiles-poison", op, 200, B=2, poison=True, flags=wide,
                              **tiles))
        narrow = 32
        cases.append(case(f"{op}-tiles-vt{narrow}-T200", op, 200, B=2, value_tile=narrow,
                          **tiles))
        cases.append(case(f"{op}-tiles-vt{narrow}-poison", op, 200, B=2,
                          value_tile=narrow, poison=True, **tiles))
    # Decay and scale: isolation off (with it, hla2 and ahla spill even at
    # 16 columns; hla3's decay vectors are not placed yet); hla2 at 16
    # columns, ahla at 32.
    for op, width in [("hla2", 16), ("ahla", 32)]:
        cases.append(case(f"{op}-tiles-vt{width}-options", op, 150, B=1, hq=4, hkv=2,
                          value_tile=width, options=dict(decay=0.95, scale=0.5),
                          flags=off, **tiles))
    # Inputs off a 16-byte boundary: element loads instead of cp.async and
    # 16-byte loads.
    cases.append(case("linear_attention-tiles-misaligned", "linear_attention", 200, B=2,
                      misaligned=True, **tiles))
    cases.append(case("hla2-tiles-misaligned", "hla2", 150, B=2, misaligned=True,
                      value_tile=32, **tiles))
    cases.append(case("ahla-tiles-wg1-vt16", "ahla", 130, B=1, value_tile=16,
                      flags=off + ["--cuda-warpgroups=1"], **tiles))
    # d = 128: states of 128 rows (two wgmma row blocks per product, A's
    # second block 64 rows into its copy). Linear attention at full value
    # width (two warpgroups) and at 64 and 32 columns; ahla at 32 and 16.
    wide = dict(tiles, d=128, dv=128)
    for T in [1, 65, 300]:
        cases.append(case(f"linear_attention-tiles-d128-T{T}", "linear_attention", T, B=2,
                          **wide))
    cases.append(case("linear_attention-tiles-d128-vt64-noiso", "linear_attention", 200,
                      B=1, value_tile=64, flags=off, **wide))
    cases.append(case("linear_attention-tiles-d128-vt32-options", "linear_attention", 200,
                      B=1, hq=4, hkv=2, value_tile=32,
                      options=dict(decay=0.95, scale=0.5), **wide))
    cases.append(case("linear_attention-tiles-d128-poison", "linear_attention", 150, B=1,
                      value_tile=32, poison=True, **wide))
    # The segmented form: a summary kernel per run of chunks, then a readout
    # kernel that folds the runs before its own into the state (runs of one
    # chunk, a ragged last run, a single token; decay, whose runs carry a
    # 0-d summary). Not hla3 (its summary kernel spills).
    seg = dict(tiles, schedule="segmented")
    for T, runs in [(1, 2), (65, 2), (300, 3), (1000, 7)]:
        cases.append(case(f"linear_attention-tiles-seg{runs}-T{T}", "linear_attention", T,
                          B=2, segments=runs, **seg))
    cases.append(case("linear_attention-tiles-seg3-options", "linear_attention", 400, B=1,
                      hq=4, hkv=2, segments=3, options=dict(decay=0.95, scale=0.5),
                      **seg))
    cases.append(case("linear_attention-tiles-seg2-decay-poison", "linear_attention", 200,
                      B=2, segments=2, options=dict(decay=0.9), poison=True, **seg))
    # (hla2 with decay needs value tiles, which the segmented form has not.)
    cases.append(case("ahla-tiles-seg3-decay", "ahla", 300, B=1, segments=3,
                      options=dict(decay=0.95), flags=off, **seg))
    cases.append(case("linear_attention-tiles-seg3-poison", "linear_attention", 400, B=2,
                      segments=3, poison=True, **seg))
    cases.append(case("hla2-tiles-seg3-noiso", "hla2", 300, B=2, segments=3, flags=off,
                      **seg))
    cases.append(case("hla2-tiles-seg3", "hla2", 300, B=2, segments=3, **seg))
    cases.append(case("hla2-tiles-seg2-poison", "hla2", 200, B=1, segments=2, poison=True,
                      **seg))
    cases.append(case("ahla-tiles-seg3", "ahla", 300, B=2, segments=3, **seg))
    cases.append(case("ahla-tiles-seg2-poison", "ahla", 200, B=1, segments=2, poison=True,
                      **seg))
    # hla2 and hla3 at d = 128 spill at every value tile; as the phases would
    # stream their state through device memory, the artefact keeps the
    # widest spilling tiles (64 columns). Chosen, not pinned: the default
    # chunk size, 72 heads (enough blocks for the register-tile trial).
    for op, T in [("hla2", 200), ("hla3", 130)]:
        cases.append(case(f"{op}-d128-spilling-tiles", op, T, B=1, hq=72, hkv=72, d=128,
                          dv=128, dtype="bf16", tol=1e-2, chunk=0, schedule="auto",
                          poison=op == "hla2"))
    # KDA: β a vector of tokens, Γ's reference rows read from its exact f32
    # copy, the pair bands reduced by each thread (PlaceTiles.cpp); ragged
    # tails, a single token, grouped heads, 32-column value tiles, causal
    # isolation on (poisoned tokens) and off, decays to exactly zero. With
    # register tiles the persistent schedule moves the work the state does
    # not reach into a kernel parallel over chunks (hoist-chunk-work=auto);
    # the -fused cases keep it in the loop. The kernels may spill: kept so.
    kda = dict(tiles, flags=["--cuda-allow-spills"])
    fused = dict(kda, flags=kda["flags"] + ["--hoist-chunk-work=off"])
    for T in [65, 300]:
        cases.append(case(f"kda-tiles-fused-T{T}", "kda", T, B=2, hq=2, hkv=1, **fused))
    for T in [1, 63, 65, 300]:
        cases.append(case(f"kda-tiles-T{T}", "kda", T, B=2, hq=2, hkv=1, **kda))
    cases.append(case("kda-tiles-T200-noiso", "kda", 200, B=2,
                      **dict(kda, flags=kda["flags"] + off)))
    cases.append(case("kda-tiles-vt32", "kda", 200, B=1, hq=4, hkv=2, value_tile=32, **kda))
    cases.append(case("kda-tiles-poison", "kda", 200, B=2, poison=True, **kda))
    cases.append(case("kda-tiles-zero-decay", "kda", 150, B=2, hq=2, hkv=1,
                      zero_decays=[(5, 0, 3), (64, 0, 0), (100, 0, 7)], **kda))
    # Chosen, not pinned (the default options): the search keeps KDA's
    # spilling register tiles over the phases, in the schedule they spilled
    # in (few blocks here: the segmented one).
    cases.append(case("kda-auto-d64", "kda", 300, B=1, hq=2, hkv=2, d=64, dv=64,
                      dtype="bf16", tol=1e-2, chunk=0, schedule="auto", poison=True))
    # With 40 (sequence, head) pairs, between a quarter and a half of the
    # SMs, the search hoists the state-free work into a kernel parallel
    # over chunks (ragged tail, poisoned tokens).
    cases.append(case("kda-auto-hoisted", "kda", 200, B=1, hq=40, hkv=40, d=64, dv=64,
                      dtype="bf16", tol=1e-2, chunk=0, schedule="auto", poison=True))
    cases.append(case("ahla-tiles-d128-vt32", "ahla", 200, B=1, value_tile=32, **wide))
    cases.append(case("ahla-tiles-d128-vt16-noiso", "ahla", 130, B=2, value_tile=16,
                      flags=off, **wide))
    return cases


def value_tile_cases():
    """The persistent schedule with the value dimension cut into tiles (one
    thread block per sequence, head and tile): every op, state in and out,
    grouped heads, bf16 at d = 128, packed sequences."""
    cases = []
    for op in OPS + ["kda"]:
        for T in [1, 100]:
            cases.append(case(f"{op}-vt8-T{T}", op, T, chunk=16, B=2, hq=4, hkv=2, d=16,
                              dv=16, state=True, options=dict(decay=0.95)
                              if op != "kda" else None, schedule="persistent",
                              value_tile=8))
        cases.append(case(f"{op}-vt64-d128-bf16", op, 300, B=1, d=128, dv=128,
                          dtype="bf16", tol=1e-2, chunk=32, schedule="persistent",
                          value_tile=64))
    cases.append(case("hla2-vt8-packed", "hla2", 150, chunk=16, B=1, hkv=1, state=True,
                      cu_seqlens=[0, 1, 1, 70, 150], schedule="persistent",
                      value_tile=8))
    return cases


def poison_cases():
    """Causal isolation: besides the reference check, run_cases.py injects
    NaN / inf into each token input at a few tokens and requires every
    output before that token to be finite and equal to the clean run's."""
    cases = []
    for op in OPS + ["kda", "linsimp"]:
        extra = dict(m=32, window=6, hkv=1) if op == "linsimp" else {}
        for schedule, segments in [("persistent", 0), ("segmented", 3)]:
            cases.append(case(f"{op}-poison-{schedule}", op, 150, chunk=16, B=2, hq=2,
                              d=16, dv=16, schedule=schedule, segments=segments,
                              poison=True, **{"hkv": 2, **extra}))
        if op in OPS:
            # The tensor-core kernels (wgmma, TMA) at a model-like head size.
            cases.append(case(f"{op}-poison-bf16", op, 200, B=1, d=64, dv=64,
                              dtype="bf16", tol=1e-2, chunk=32 if op == "hla3" else 64,
                              options=dict(decay=0.95), poison=True))
    return cases


def kda_cases():
    """KDA: L2-normalised keys, log-decays g <= 0, beta in (0.1, 0.9)."""
    cases = []
    for T in [1, 17, 100]:
        for chunk in [16, 64]:
            cases.append(case(f"kda-T{T}-c{chunk}", "kda", T, chunk=chunk, hq=2, hkv=1,
                              d=16, dv=16))
    for schedule, segments in [("persistent", 0), ("segmented", 3)]:
        cases.append(case(f"kda-state-{schedule}", "kda", 90, chunk=16, B=2, hq=4, hkv=2,
                          d=16, dv=8, state=True, schedule=schedule, segments=segments))
    cases.append(case("kda-packed", "kda", 150, chunk=16, B=1, hkv=1, state=True,
                      cu_seqlens=[0, 1, 1, 70, 150]))
    cases.append(case("kda-bf16", "kda", 300, chunk=64, B=1, hq=2, hkv=2, d=64, dv=64,
                      dtype="bf16", tol=1e-2))
    # Scale 1: the monoid simplified without its parameter, still the gated
    # delta rule (every target once refused it).
    cases.append(case("kda-scale1", "kda", 100, chunk=16, hq=2, hkv=1,
                      options={"scale": 1.0}))
    # Decays to exactly zero (g = -inf at these (token, kv head, channel)),
    # in the middle and at the start of chunks: finite and as the reference.
    for schedule, segments in [("persistent", 0), ("segmented", 3)]:
        cases.append(case(f"kda-zero-decay-{schedule}", "kda", 100, chunk=16, B=2, hq=2,
                          hkv=1, schedule=schedule, segments=segments,
                          zero_decays=[(5, 0, 3), (16, 0, 0), (40, 0, 7)]))
    return cases
