#!/usr/bin/env python3
"""hla.fla beside FLA itself: the same calls through both, on the GPU.

    fla_swap_check.py build CACHE   # here: the calls' CUDA artefacts into CACHE
    fla_swap_check.py run           # on the GPU (HLA_CACHE_DIR=CACHE, FLA_PARENT)

An FLA user swaps `from fla.ops... import f` for `from hla.fla import f`;
this runs each case through both and prints the relative difference of
the outputs, final states and (where hla derives them) gradients, in bf16.
`build` runs every case on the CPU (bf16) while recording the compiles, then
compiles the same artefacts for CUDA (the GPU machine has no compiler).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torch  # noqa: E402

B, T, H, K, V = 2, 1000, 4, 64, 64


def _inputs(device, seed, hv=H):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    x = {"q": r(B, T, H, K) * K ** -0.5, "k": r(B, T, H, K) * K ** -0.5, "v": r(B, T, hv, V),
         "do": r(B, T, hv, V), "h0": r(B, hv, K, V) * 0.1,
         "graw": r(B, T, hv, K), "beta": torch.rand(B, T, hv, generator=g),
         "A_log": r(hv) * 0.5, "dt_bias": r(hv * K) * 0.5}
    bf16 = ("q", "k", "v", "do", "graw", "beta")
    return {n: (t.to(torch.bfloat16) if n in bf16 else t).to(device) for n, t in x.items()}


def cases(module):
    """(name, call(x) -> (o, final), differentiable?) for module = FLA's or hla.fla."""
    la, kda = module

    def flat(x):
        return {n: x[n].reshape(1, -1, *x[n].shape[2:]) for n in ("q", "k", "v", "do")}
    cu = lambda x: torch.tensor([0, 300, 301, 1200, 2 * T], device=x["q"].device)  # noqa: E731
    return [
        ("chunk_linear_attn default (normalize)",
         lambda x: la.chunk_linear_attn(x["q"].abs(), x["k"].abs(), x["v"]), True),
        ("chunk_linear_attn state in/out",
         lambda x: la.chunk_linear_attn(x["q"], x["k"], x["v"], initial_state=x["h0"],
                                        output_final_state=True, normalize=False), False),
        ("fused_recurrent_linear_attn reverse, packed",
         lambda x: la.fused_recurrent_linear_attn(
             *(flat(x)[n] for n in "qkv"), output_final_state=True, reverse=True,
             cu_seqlens=cu(x)), False),
        ("chunk_linear_attn packed (varlen training)",
         lambda x: la.chunk_linear_attn(*(flat(x)[n] for n in "qkv"), normalize=False,
                                        cu_seqlens=cu(x)), True),
        ("chunk_kda plain",
         lambda x: kda.chunk_kda(x["q"], x["k"], x["v"], -x["beta"].unsqueeze(-1).expand(
             -1, -1, -1, K).float().mul(0.05).to(x["q"].dtype), x["beta"],
             initial_state=x["h0"], output_final_state=True), False),
        ("chunk_kda gate+l2norm+sigmoid, GVA",
         lambda x: kda.chunk_kda(x["q"], x["k"], x["v"], x["graw"], x["beta"],
                                 A_log=x["A_log"], dt_bias=x["dt_bias"],
                                 use_gate_in_kernel=True, use_qk_l2norm_in_kernel=True,
                                 use_beta_sigmoid_in_kernel=True, output_final_state=True),
         False),
    ]


def _hla_modules():
    import hla.fla
    return hla.fla, hla.fla


def _fla_modules():
    for place in (os.environ.get("FLA_PARENT"), os.path.join(HERE, "..", "..", "shared",
                                                             "peers")):
        if place and os.path.isdir(os.path.join(place, "fla")):
            sys.path.insert(0, place)
    import fla.ops.kda as kda
    import fla.ops.linear_attn as la
    return la, kda


def _inputs_for(name, device):
    return _inputs(device, 1, hv=2 * H if "GVA" in name else H)


def build(cache):
    from hla import compiler, functional
    os.environ["HLA_CACHE_DIR"] = cache
    with functional.recorded_compiles() as records:
        for name, call, differentiable in cases(_hla_modules()):
            x = _inputs_for(name, "cpu")
            if differentiable:
                for n in ("q", "k", "v"):
                    x[n].requires_grad_(True)
            o, _ = call(x)
            if differentiable:
                o.float().mul(x["do"].reshape(o.shape).float()).sum().backward()
            print(name, "ran on the CPU", flush=True)
    for text, options in records:
        print("precompiled", compiler.precompile(text, "cuda", **options), flush=True)


def _rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30))


def run():
    rows = []
    ours, theirs = _hla_modules(), _fla_modules()
    for (name, mine, grad), (_, peer, _) in zip(cases(ours), cases(theirs)):
        results = []
        for call in (mine, peer):
            x = _inputs_for(name, "cuda")
            leaves = [x[n] for n in ("q", "k", "v")]
            if grad:
                for t in leaves:
                    t.requires_grad_(True)
            o, final = call(x)
            grads = []
            if grad:
                o.backward(x["do"].reshape(o.shape))
                grads = [t.grad for t in leaves]
            # FLA's normalized linear attention returns (None, z_state) where
            # its docstring (which hla.fla follows) says None: compare the
            # states both return.
            finals = [] if final is None else list(final) if isinstance(final, tuple) else [final]
            results.append((o.detach(), [f.detach() for f in finals if f is not None], grads))
        (o1, f1, g1), (o2, f2, g2) = results
        row = {"case": name, "o": _rel(o1, o2),
               "final_state": [_rel(a, b) for a, b in zip(f1, f2)] if len(f1) == len(f2) else
               f"hla {len(f1)} tensors, FLA {len(f2)}",
               "grads": [_rel(a, b) for a, b in zip(g1, g2)]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "fla_swap_check.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    else:
        run()
