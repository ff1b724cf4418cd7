"""Context parallelism: one sequence split along T over the ranks of a
``torch.distributed`` process group.

Each rank holds its own span of the tokens (rank 0 the first, in rank
order; spans may differ in length) and calls the op with the same options
on every rank::

    o, final = hla.distributed.hla2(q_span, k_span, v_span, group=group,
                                    output_final_state=True)

What happens, from the op's monoid (no per-op code here):

1. the compiled summary (``attend_summary``, ``hla-add-summary-entries``)
   gives every component of the span's total: what the span does to any
   state before it;
2. one all-gather of the totals (all components of a rank, flattened);
3. each rank carries the initial state (zeros, or ``initial_state``)
   through the totals of the ranks before it with the compiled combine
   (``attend_combine``) and
4. runs the op on its span from that state.

The output is the rank's rows of the whole sequence's output; the final
state (``output_final_state=True``) is the whole sequence's, on every rank.
LinSimp's anchor window also reads the W − 1 tokens before a span: each
rank's last W − 1 anchor rows (r, u) travel in the same collective, and a
rank's initial anchors are the last W − 1 rows of the initial anchors and
the spans before its own.

Packed sequences: ``cu_seqlens`` are the offsets into the whole packed
sequence (B = 1), the same on every rank; a span holds pieces of the
sequences that overlap it, each rank computes every span's pieces, the
totals are per piece, and each sequence's state is carried through the
pieces of the spans before. Initial and final states are per sequence,
``[N, H, ...]``. Forward only; LinSimp is not split with ``cu_seqlens``
yet.
"""

from __future__ import annotations

from . import _tensors, compiler, functional

_entries = {}  # call signature -> (attend, attend_summary, attend_combine)
compiler.register_memory_cache(_entries)

SPLIT_OPS = ("linear_attention", "hla2", "ahla", "hla3", "kda", "linsimp")
# The backward across ranks carries the state's cotangent back through the
# later spans with the compiled transposed combine (hla-add-summary-entries:
# from the monoid's index plan, or KDA's combine differentiated in reverse).
SPLIT_DIFFERENTIABLE = ("linear_attention", "hla2", "ahla", "hla3", "kda")


def compile_request(op, shapes, dtypes, attrs, state_shapes, cu, chunk_size):
    """(IR text, compile options) of a span's artefact: the op from an
    initial state, its summary and its combine (``cu``: None or (length,
    "i32"/"i64") of the local offsets). For ``compiler.precompile`` too (a
    GPU machine without the compiler)."""
    text = functional.build_ir(op, shapes, dtypes, attrs, state_shapes, [], cu)
    return text, dict(chunk_size=chunk_size, summary_entries=True,
                      entry=functional.ir.FUNCTION_NAME)


def _compiled(op, arrays, dtypes, attrs, state_shapes, cu, chunk_size, target):
    """The compiled `compile_request` for this span's shapes (memoised):
    attend, its summary, combine and (where the backward is derived, else
    None) transposed combine."""
    shapes = [functional._shape(x) for x in arrays]
    key = (op, target, tuple(shapes), tuple(dtypes), tuple(sorted(attrs.items())),
           tuple(state_shapes), cu, chunk_size)
    found = _entries.get(key)
    if found is None:
        text, options = compile_request(op, shapes, dtypes, attrs, state_shapes, cu,
                                        chunk_size)
        library = compiler.compile(text, target=target, **options)
        name = functional.ir.FUNCTION_NAME
        found = tuple(library.function(name + suffix)
                      for suffix in ("", "_summary", "_combine"))
        found += (library.function(name + "_combine_vjp")
                  if op in SPLIT_DIFFERENTIABLE else None,)
        _entries[key] = found
    return found


def _check_group(op, torch, dist, group, call, error):
    """Rank, world size and span lengths. Every rank's argument checks, its
    [B, H, D] sizes and span length are gathered first, so that a bad
    argument on one rank raises on every rank instead of leaving the others
    waiting in a collective: the spans must agree in every size but T, and
    none may be empty."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    host = dist.get_backend(group) == "gloo"  # gloo gathers host memory only
    device = "cpu" if host or call is None else call.device
    sizes = [] if call is None else [
        s for x in call.arrays for i, s in enumerate(functional._shape(x)) if i != 1]
    T = -1 if call is None else call.T
    mine = [int(error is None), T] + (sizes + [-1] * 32)[:32]
    mine = torch.tensor(mine, dtype=torch.int64, device=device)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine, group=group)
    every = [e.tolist() for e in every]
    failed = [j for j, e in enumerate(every) if not e[0]]
    if error is not None:
        raise error
    if failed:
        raise RuntimeError(f"hla.distributed.{op}: rank(s) {failed} refused their "
                           f"arguments (their errors say why)")
    if any(e[2:] != every[0][2:] for e in every):
        raise ValueError(f"hla.distributed.{op}: the ranks' spans differ in a size other "
                         f"than T (every operand's [B, H, D] must agree); per rank: "
                         f"{[[s for s in e[2:] if s >= 0] for e in every]}")
    if any(e[1] == 0 for e in every):
        raise ValueError(f"hla.distributed.{op}: every rank needs at least one token; "
                         f"span lengths per rank: {[e[1] for e in every]}")
    return rank, world, [e[1] for e in every]


class _Call:
    """One rank's checked arguments."""


def _prepare(op, named, options, initial_state, chunk_size, target, cu_seqlens, torch):
    """The rank-local checks of hla.<op> (they raise TypeError, ValueError
    or NotImplementedError)."""
    c = _Call()
    c.lib, c.device, _, arrays = functional._check_operands(op, named)
    lib = c.lib
    if lib is not _tensors.TorchArrays:
        raise TypeError(f"hla.distributed.{op}: needs torch tensors (torch.distributed "
                        f"exchanges them)")
    c.B, c.T, c.Hq, d = functional._shape(arrays[0])
    c.attrs = functional._check_options(op, d, options)
    c.chunk_size = functional._check_chunk_size(op, chunk_size)
    c.target = functional._target_for(op, c.device, target)
    if c.target == "cuda" and c.device != "cuda:0":
        raise ValueError(f"hla.distributed.{op}: hla's CUDA runtime runs on device 0; give "
                         f"each rank its GPU with CUDA_VISIBLE_DEVICES")
    if op == "kda":
        functional.check_log_decay(op, lib, arrays[3])
    if op == "linsimp" and c.attrs["kernel"] != "favor":
        raise NotImplementedError(f"hla.distributed.{op}: kernel='exact' has no finite "
                                  f"state to carry between ranks; use kernel='favor'")
    c.cu = functional._check_cu_seqlens(op, lib, c.device, cu_seqlens, c.B)
    if c.cu is not None and op == "linsimp":
        raise NotImplementedError(f"hla.distributed.{op}: packed sequences (cu_seqlens) "
                                  f"are not split for linsimp yet (its anchor windows)")
    m = functional._shape(arrays[-1])[0] if op == "linsimp" else None
    c.components = functional.state_components(op, d, functional._shape(arrays[2])[3],
                                               c.attrs, m)
    c.N = c.B if c.cu is None else int(c.cu.shape[0]) - 1
    shapes = [(c.N, c.Hq) + tuple(s) for _, s in c.components]
    c.states = functional._check_initial_state(op, lib, c.device, initial_state, shapes,
                                               [n for n, _ in c.components])
    c.differentiate = torch.is_grad_enabled() and any(
        x.requires_grad for x in list(arrays) + list(c.states))
    if c.differentiate and op not in SPLIT_DIFFERENTIABLE:
        raise NotImplementedError(f"hla.distributed.{op}: backward is not implemented yet "
                                  f"(across ranks for "
                                  f"{', '.join(SPLIT_DIFFERENTIABLE)}); call it under "
                                  f"torch.no_grad()")
    if c.differentiate and c.target == "cuda" and op != "linear_attention":
        # The transposed combine's graph products on CUDA gave NaN for hla2
        # on the H200 (2026-12-03; the CPU's agree with autograd): refused
        # until that is found rather than a wrong gradient.
        raise NotImplementedError(f"hla.distributed.{op}: the backward across ranks on CUDA "
                                  f"runs for linear_attention only yet (the transposed "
                                  f"combine on CUDA is wrong for {op}: docs/PYTHON.md)")
    if c.differentiate and c.cu is not None:
        raise NotImplementedError(f"hla.distributed.{op}: the backward of packed sequences "
                                  f"across ranks is not implemented yet")
    c.arrays = [lib.contiguous(x) for x in arrays]
    c.dtypes = [lib.dtype_name(x) for x in c.arrays]
    return c


def _anchor_history(torch, initial, tails, lengths, Hq, upto):
    """LinSimp's anchor state (r, u, validity) before span `upto`: the last
    W − 1 rows of the initial anchors followed by the spans' anchor rows
    before it. `tails[j]`: span j's last W − 1 rows of r and u per kv head
    ([B, W − 1, H_kv, ·], the first W − 1 − min(T_j, W − 1) rows unused)."""
    r0, u0, valid0 = initial
    rows_r, rows_u, rows_valid = [r0], [u0], [valid0]
    for j in range(upto):
        keep = min(lengths[j], r0.shape[2])
        tail_r, tail_u = tails[j]
        group = Hq // tail_r.shape[2]
        # [B, W-1, H_kv, ·] -> [B, H_q, keep, ·]: query head h reads kv head h // group.
        rows_r.append(tail_r[:, tail_r.shape[1] - keep:].repeat_interleave(group, 2)
                      .permute(0, 2, 1, 3))
        rows_u.append(tail_u[:, tail_u.shape[1] - keep:].repeat_interleave(group, 2)
                      .permute(0, 2, 1, 3))
        rows_valid.append(torch.ones(valid0.shape[:2] + (keep,), dtype=valid0.dtype,
                                     device=valid0.device))
    halo = r0.shape[2]
    return [torch.cat(rows_r, 2)[:, :, -halo:].contiguous(),
            torch.cat(rows_u, 2)[:, :, -halo:].contiguous(),
            torch.cat(rows_valid, 2)[:, :, -halo:].contiguous()]


class _Packing:
    """Packed sequences (global ``cu_seqlens``) over the ranks' spans: a
    span holds pieces of the sequences that overlap it. Every rank computes
    every span's pieces from the offsets and the span lengths. A span's
    local offsets have N + 2 entries whatever its pieces (trailing empty
    sequences), so that one artefact serves every split of N sequences and
    the last local sequence is always empty: its total is the identity."""

    def __init__(self, offsets, lengths):
        self.offsets, self.count = offsets, len(offsets) - 1
        self.starts = [sum(lengths[:j]) for j in range(len(lengths))]
        self.lengths = lengths

    def pieces(self, j):
        """[(sequence, local start, local end)] of span j, in order."""
        lo = self.starts[j]
        hi = lo + self.lengths[j]
        out = []
        for n in range(self.count):
            a, b = max(self.offsets[n], lo), min(self.offsets[n + 1], hi)
            if a < b:
                out.append((n, a - lo, b - lo))
        return out

    def local_offsets(self, j):
        ends = [end for _, _, end in self.pieces(j)]
        return [0] + ends + [self.lengths[j]] * (self.count + 1 - len(ends))

    def slot_of_sequence(self, j):
        """Per global sequence (and the extra last row): its piece's local
        sequence in span j, or the always-empty last one (the identity)."""
        slots = [self.count] * (self.count + 1)
        for p, (n, _, _) in enumerate(self.pieces(j)):
            slots[n] = p
        return slots


def _run(op, named, options, initial_state, output_final_state, chunk_size, target, group,
         cu_seqlens=None):
    if op not in SPLIT_OPS:
        raise NotImplementedError(f"hla.distributed: {op} is not split across ranks yet "
                                  f"(split: {', '.join(SPLIT_OPS)})")
    torch = _tensors.torch_module()
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(f"hla.distributed.{op}: torch.distributed is not initialized "
                           f"(call torch.distributed.init_process_group first)")
    try:
        c, error = _prepare(op, named, options, initial_state, chunk_size, target,
                            cu_seqlens, torch), None
    except (TypeError, ValueError, NotImplementedError) as e:
        c, error = None, e
    rank, world, lengths = _check_group(op, torch, dist, group, c, error)
    lib, device, arrays, dtypes, attrs = c.lib, c.device, c.arrays, c.dtypes, c.attrs
    B, T, Hq, N, cu = c.B, c.T, c.Hq, c.N, c.cu
    chunk_size, target, components = c.chunk_size, c.target, c.components
    shapes = [(N, Hq) + tuple(s) for _, s in components]
    state = ([lib.contiguous(s) for s in c.states] if c.states
             else [torch.zeros(s, dtype=torch.float32, device=device) for s in shapes])
    packing, local_cu = None, []
    if cu is not None:
        offsets = [int(o) for o in lib.to_list(cu)]
        functional.check_cu_seqlens_values(op, offsets, sum(lengths))
        packing = _Packing(offsets, lengths)
        local_cu = [torch.tensor(packing.local_offsets(rank), dtype=torch.int32,
                                 device=device)]
        # One more row: the local sequence that is always empty.
        shapes = [(N + 1, Hq) + tuple(s) for _, s in components]
        state = [torch.cat([s, torch.zeros((1,) + tuple(s.shape[1:]), dtype=s.dtype,
                                           device=device)]) for s in state]
    attend, summary, combine, combine_vjp = _compiled(
        op, arrays, dtypes, attrs, shapes,
        None if packing is None else (N + 2, "i32"), chunk_size, target)

    def call(fn, ins):
        outs = [lib.empty(s.shape, s.dtype, device) for s in fn.outputs]
        functional._run_compiled(op, fn, lib, ins, outs, target, device)
        return outs

    # 1-2. Every rank's total (LinSimp: and its last W - 1 anchor rows),
    #      gathered in one collective.
    parts = call(summary, arrays + local_cu)
    k = len(combine.outputs)  # the monoid's carried components
    if op == "linsimp":
        halo = attrs["window"] - 1
        for x in arrays[3:5]:  # r, u: the last W - 1 rows, zero-padded in front
            tail = torch.zeros((B, halo) + tuple(x.shape[2:]), dtype=torch.float32,
                               device=device)
            keep = min(T, halo)
            if keep:
                tail[:, halo - keep:] = x[:, T - keep:].float()
            parts.append(tail)
    flat = torch.cat([t.reshape(-1) for t in parts])
    # gloo gathers host memory only: CUDA tensors go through the host there.
    via_host = flat.is_cuda and dist.get_backend(group) == "gloo"
    if via_host:
        flat = flat.cpu()
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat, group=group)
    if via_host:
        gathered = [g.to(device) for g in gathered]

    n_totals = len(summary.outputs)

    def totals_of(j):
        """Span j's totals, per global sequence when packed."""
        out, at = [], 0
        for t in parts[:n_totals]:
            out.append(gathered[j][at:at + t.numel()].view(t.shape))
            at += t.numel()
        if packing is not None:
            slots = torch.tensor(packing.slot_of_sequence(j), device=device)
            out = [t.index_select(0, slots) for t in out]
        return out

    def tails_of(j):
        out, at = [], sum(t.numel() for t in parts[:n_totals])
        for t in parts[n_totals:]:
            out.append(gathered[j][at:at + t.numel()].view(t.shape))
            at += t.numel()
        return out

    # 3. The state before this rank's span; 4. the span from it.
    carried, anchors = state[:k], state[k:]
    for j in range(rank):
        carried = call(combine, carried + totals_of(j))

    def anchors_before(j):
        if op != "linsimp":
            return []
        return _anchor_history(torch, anchors, [tails_of(i) for i in range(j)], lengths,
                               Hq, j)

    initial = carried
    if packing is not None:  # each local sequence starts from its sequence's state
        order = [n for n, _, _ in packing.pieces(rank)]
        order += [N] * (N + 1 - len(order))
        initial = [c.index_select(0, torch.tensor(order, device=device)) for c in carried]
    output = call(attend, arrays + initial + anchors_before(rank) + local_cu)[0]
    befores = [carried]  # the states before spans rank, rank + 1, ..., world
    for j in range(rank, world):
        befores.append(call(combine, befores[-1] + totals_of(j)))
    final = befores[-1]
    if packing is not None:
        final = [f[:N] for f in final]
    final = final + anchors_before(world)
    if c.differentiate:

        def to_all(flat, gather):
            """All-gather (or sum over the ranks) `flat`, through the host
            for gloo's CUDA tensors."""
            host = flat.is_cuda and dist.get_backend(group) == "gloo"
            x = flat.cpu() if host else flat
            if gather:
                out = [torch.empty_like(x) for _ in range(world)]
                dist.all_gather(out, x, group=group)
                return [o.to(device) for o in out]
            dist.all_reduce(x, group=group)
            return x.to(device)

        def backward(g, final_grads):
            return _backward_across_ranks(
                op, torch, rank, world, arrays, c.states, attrs, chunk_size, befores,
                totals_of, g, final_grads, shapes, lambda ins: call(combine_vjp, ins), to_all)

        leaves = list(c.arrays) + list(c.states)
        outs = _Split.apply(backward, [output] + list(final), *leaves)
        output, final = outs[0], list(outs[1:])
    if not output_final_state:
        return output
    return output, tuple(final)


def _backward_across_ranks(op, torch, rank, world, arrays, user_states, attrs, chunk_size,
                           befores, totals_of, g, final_grads, shapes, combine_vjp, to_all):
    """The gradients of rank `rank`'s leaves (the op's tensors, and the
    initial state when given). Every rank must call backward (it exchanges twice).

    Span j maps the state S_j before it to S_{j+1} = A_j S_j + B_j (A_j from
    its total alone). With λ_j = ∂L/∂S_j, λ_j = A_jᵀ λ_{j+1} + c_j, where c_j
    is the initial-state gradient of span j's own outputs; λ_world is the
    final state's cotangent, summed over the ranks. A rank computes its c
    (a backward pass without a final-state cotangent), gathers every c,
    carries λ back from the last span to its own (A_jᵀ: the compiled
    transposed combine), then runs its backward with λ_{rank + 1} as the
    final state's cotangent. The initial state's gradient is rank 0's (the
    other ranks return zeros: summed over the ranks it is whole)."""
    from . import _torch_ops
    q, v = arrays[0], arrays[2]
    g = _torch_ops._output_cotangent(q, v, g)
    device = q.device
    h = [fg.float() if fg is not None else torch.zeros(s, dtype=torch.float32, device=device)
         for fg, s in zip(list(final_grads) + [None] * len(shapes), shapes)]
    summed = to_all(torch.cat([x.reshape(-1) for x in h]), gather=False)
    split = lambda flat: [t.view(s) for t, s in zip(  # noqa: E731
        torch.split(flat, [int(torch.Size(s).numel()) for s in shapes]), shapes)]
    # The state before this rank's span, then after each later one.
    local = list(befores[0])
    own = _torch_ops._input_gradients(op, arrays, local, None, attrs, chunk_size, [g])
    n = len(arrays)
    every = to_all(torch.cat([x.reshape(-1) for x in own[n:]]), gather=True)
    lam = split(summed)
    for j in range(world - 1, rank, -1):
        mu = combine_vjp(list(befores[j - rank]) + totals_of(j) + lam)
        lam = [m + cj for m, cj in zip(mu, split(every[j]))]
    d = _torch_ops._input_gradients(op, arrays, local, None, attrs, chunk_size, [g, *lam])
    grads = list(d[:n])
    if user_states:
        grads += (list(d[n:]) if rank == 0
                  else [torch.zeros_like(s) for s in user_states])
    return grads


class _Split:
    """The autograd node of a split call (built on first use: torch is
    imported lazily)."""

    _function = None

    @classmethod
    def apply(cls, backward, outputs, *leaves):
        if cls._function is None:
            import torch

            class Function(torch.autograd.Function):
                @staticmethod
                def forward(ctx, backward, outputs, *leaves):
                    ctx.hla_backward = backward
                    ctx.set_materialize_grads(False)
                    return tuple(outputs)

                @staticmethod
                def backward(ctx, g, *final_grads):
                    return (None, None, *ctx.hla_backward(g, final_grads))

            cls._function = Function
        return cls._function.apply(backward, outputs, *leaves)


# Operands after q, k, v: positional ones, then keyword ones (as hla.<op>).
_POSITIONAL = {"linsimp": ("r", "u")}
_KEYWORD = {"kda": ("g", "beta"), "linsimp": ("omega",)}
_DEFAULTS = {"normalize": False, "eps": 1e-6, "masked": True, "ridge": 0.0, "window": 64,
             "kernel": "favor"}


def options_of(op, keywords):
    """The op's options, from the keywords given and hla.<op>'s defaults."""
    return {p: keywords.get(p, _DEFAULTS.get(p)) for p in functional.OP_ATTRIBUTES[op]}


def _op(name):
    params = functional.OP_ATTRIBUTES[name]
    positional, keyword = _POSITIONAL.get(name, ()), _KEYWORD.get(name, ())
    base = getattr(functional, name)

    def split(q, k, v, *args, group=None, initial_state=None, output_final_state=False,
              cu_seqlens=None, chunk_size=None, target=None, **options):
        if len(args) > len(positional):
            raise TypeError(f"hla.distributed.{name}: takes {3 + len(positional)} positional "
                            f"operands, got {3 + len(args)}")
        kw = dict(options)
        operands = [("q", q), ("k", k), ("v", v)] + list(zip(positional, args))
        for operand in positional[len(args):] + keyword:
            if operand not in kw:
                raise TypeError(f"hla.distributed.{name}: missing operand {operand!r}")
            operands.append((operand, kw.pop(operand)))
        unknown = set(kw) - set(params)
        if unknown:
            raise TypeError(f"hla.distributed.{name}: unknown keyword(s) "
                            f"{', '.join(sorted(unknown))} (options: {', '.join(params)})")
        return _run(name, operands, options_of(name, kw), initial_state, output_final_state,
                    chunk_size, target, group, cu_seqlens)

    split.__name__ = split.__qualname__ = name
    split.__doc__ = (f"``hla.{name}`` over one sequence split along T across the ranks "
                     f"of ``group`` (this module's docstring); the same operands and "
                     f"keywords.\n\n" + (base.__doc__ or ""))
    return split


linear_attention = _op("linear_attention")
hla2 = _op("hla2")
ahla = _op("ahla")
hla3 = _op("hla3")
kda = _op("kda")
linsimp = _op("linsimp")
