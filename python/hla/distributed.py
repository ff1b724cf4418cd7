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
Forward only; packed sequences (``cu_seqlens``) and LinSimp (whose anchor
window also needs the tokens before a span) are not split yet.
"""

from __future__ import annotations

from . import _tensors, compiler, functional

_entries = {}  # call signature -> (attend, attend_summary, attend_combine)
compiler.register_memory_cache(_entries)

SPLIT_OPS = ("linear_attention", "hla2", "ahla", "hla3", "kda")


def _compiled(op, arrays, dtypes, attrs, state_shapes, chunk_size, target):
    """The op from an initial state, its summary and its combine, compiled
    together (one artefact) for this span's shapes."""
    shapes = [functional._shape(x) for x in arrays]
    key = (op, target, tuple(shapes), tuple(dtypes), tuple(sorted(attrs.items())),
           tuple(state_shapes), chunk_size)
    found = _entries.get(key)
    if found is None:
        text = functional.build_ir(op, shapes, dtypes, attrs, state_shapes, [], None)
        library = compiler.compile(text, target=target, chunk_size=chunk_size,
                                   summary_entries=True, entry=functional.ir.FUNCTION_NAME)
        name = functional.ir.FUNCTION_NAME
        found = tuple(library.function(name + suffix)
                      for suffix in ("", "_summary", "_combine"))
        _entries[key] = found
    return found


def _check_group(op, torch, dist, group, arrays, device):
    """Rank and world size; the ranks' spans must agree in every size but
    T and none may be empty (checked together, so that every rank raises)."""
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(f"hla.distributed.{op}: torch.distributed is not initialized "
                           f"(call torch.distributed.init_process_group first)")
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    sizes = [s for x in arrays for i, s in enumerate(functional._shape(x)) if i != 1]
    T = functional._shape(arrays[0])[1]
    mine = torch.tensor([T] + sizes, dtype=torch.int64, device=device)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine, group=group)
    every = [e.tolist() for e in every]
    if any(e[1:] != every[0][1:] for e in every):
        raise ValueError(f"hla.distributed.{op}: the ranks' spans differ in a size other "
                         f"than T (every operand's [B, H, D] must agree); per rank: "
                         f"{[e[1:] for e in every]}")
    if any(e[0] == 0 for e in every):
        raise ValueError(f"hla.distributed.{op}: every rank needs at least one token; "
                         f"span lengths per rank: {[e[0] for e in every]}")
    return rank, world


def _run(op, named, options, initial_state, output_final_state, chunk_size, target, group):
    if op not in SPLIT_OPS:
        raise NotImplementedError(f"hla.distributed: {op} is not split across ranks yet "
                                  f"(split: {', '.join(SPLIT_OPS)})")
    lib, device, _, arrays = functional._check_operands(op, named)
    if lib is not _tensors.TorchArrays:
        raise TypeError(f"hla.distributed.{op}: needs torch tensors (torch.distributed "
                        f"exchanges them)")
    torch = _tensors.torch_module()
    import torch.distributed as dist
    if torch.is_grad_enabled() and any(x.requires_grad for x in arrays):
        raise NotImplementedError(f"hla.distributed.{op}: the backward across ranks is not "
                                  f"implemented yet; call it under torch.no_grad()")
    B, T, Hq, d = functional._shape(arrays[0])
    attrs = functional._check_options(op, d, options)
    chunk_size = functional._check_chunk_size(op, chunk_size)
    target = functional._target_for(op, device, target)
    if target == "cuda" and device != "cuda:0":
        raise ValueError(f"hla.distributed.{op}: hla's CUDA runtime runs on device 0; give "
                         f"each rank its GPU with CUDA_VISIBLE_DEVICES")
    if op == "kda":
        functional.check_log_decay(op, lib, arrays[3])
    components = functional.state_components(op, d, functional._shape(arrays[2])[3], attrs)
    shapes = [(B, Hq) + tuple(s) for _, s in components]
    states = functional._check_initial_state(op, lib, device, initial_state, shapes,
                                             [n for n, _ in components])
    rank, world = _check_group(op, torch, dist, group, arrays, device)
    arrays = [lib.contiguous(x) for x in arrays]
    dtypes = [lib.dtype_name(x) for x in arrays]
    attend, summary, combine = _compiled(op, arrays, dtypes, attrs, shapes, chunk_size,
                                         target)

    def call(fn, ins):
        outs = [lib.empty(s.shape, s.dtype, device) for s in fn.outputs]
        functional._run_compiled(op, fn, lib, ins, outs, target, device)
        return outs

    # 1-2. Every rank's total, gathered in one collective.
    totals = call(summary, arrays)
    flat = torch.cat([t.reshape(-1) for t in totals])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat, group=group)

    def total_of(j):
        parts, at = [], 0
        for t in totals:
            parts.append(gathered[j][at:at + t.numel()].view(t.shape))
            at += t.numel()
        return parts

    # 3. The state before this rank's span; 4. the span from it.
    state = ([lib.contiguous(s) for s in states] if states
             else [torch.zeros(s, dtype=torch.float32, device=device) for s in shapes])
    for j in range(rank):
        state = call(combine, state + total_of(j))
    output = call(attend, arrays + state)[0]
    if not output_final_state:
        return output
    for j in range(rank, world):
        state = call(combine, state + total_of(j))
    return output, tuple(state)


def _op(name, extra=()):
    params = functional.OP_ATTRIBUTES[name]
    base = getattr(functional, name)

    def split(q, k, v, *args, group=None, initial_state=None, output_final_state=False,
              chunk_size=None, target=None, **options):
        operands = [("q", q), ("k", k), ("v", v)]
        kw = dict(options)
        for operand in extra:
            if operand not in kw:
                raise TypeError(f"hla.distributed.{name}: missing keyword operand "
                                f"{operand!r}")
            operands.append((operand, kw.pop(operand)))
        if args:
            raise TypeError(f"hla.distributed.{name}: takes q, k, v and keywords")
        unknown = set(kw) - set(params)
        if unknown:
            raise TypeError(f"hla.distributed.{name}: unknown keyword(s) "
                            f"{', '.join(sorted(unknown))} (options: {', '.join(params)})")
        defaults = {"normalize": False, "eps": 1e-6, "masked": True, "ridge": 0.0}
        opts = {p: kw.get(p, defaults.get(p)) for p in params}
        return _run(name, operands, opts, initial_state, output_final_state, chunk_size,
                    target, group)

    split.__name__ = split.__qualname__ = name
    split.__doc__ = (f"``hla.{name}`` over one sequence split along T across the ranks "
                     f"of ``group`` (this module's docstring). Keywords as "
                     f"``hla.{name}``{' (with ' + ', '.join(extra) + ')' if extra else ''}; "
                     f"no ``cu_seqlens``.\n\n" + (base.__doc__ or ""))
    return split


linear_attention = _op("linear_attention")
hla2 = _op("hla2")
ahla = _op("ahla")
hla3 = _op("hla3")
kda = _op("kda", extra=("g", "beta"))
