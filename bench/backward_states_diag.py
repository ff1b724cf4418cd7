"""The derived backward through states on CUDA against the CPU's.

    backward_states_diag.py prep DIR   # here: CPU gradients into DIR/<case>.npz,
                                       # the CUDA artefacts into $HLA_CACHE_DIR
    backward_states_diag.py run DIR    # on the GPU: CUDA gradients against them

Cases: f32 / bf16, with and without states, d = 16 / 64 (B = 2, T = 100,
H = 2), hla2, linear attention, hla3; hla3 last (its f32 d = 64 kernel
stopped with an illegal instruction on the H200, which ends the process's
CUDA context)."""
import os, sys, json
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch
import hla
from hla import functional, compiler

CASES = {
    "hla2-f32-d64-nostate": dict(op="hla2", d=64, dtype=torch.float32, states=False),
    "hla2-f32-d64-states": dict(op="hla2", d=64, dtype=torch.float32, states=True),
    "hla2-f32-d16-states": dict(op="hla2", d=16, dtype=torch.float32, states=True),
    "hla2-bf16-d64-states": dict(op="hla2", d=64, dtype=torch.bfloat16, states=True),
    "linear-f32-d64-states": dict(op="linear_attention", d=64, dtype=torch.float32, states=True),
    "hla3-f32-d64-nostate": dict(op="hla3", d=64, dtype=torch.float32, states=False),
    "hla3-f32-d64-states": dict(op="hla3", d=64, dtype=torch.float32, states=True),
}


def grads(c, device):
    rng = np.random.default_rng(3)
    B, T, H, d = 2, 100, 2, c["d"]
    x = [torch.from_numpy(rng.standard_normal((B, T, H, d)).astype(np.float32) * d ** -0.5)
         for _ in range(3)]
    opts = {"decay": 0.99} if c["op"] != "hla3" else {}
    shapes = functional.state_shapes(c["op"], x, opts, B)
    s0 = [torch.from_numpy(rng.standard_normal(s).astype(np.float32) * 0.1) for s in shapes]
    g = torch.from_numpy(rng.standard_normal((B, T, H, d)).astype(np.float32))
    h = [torch.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    leaves = [t.to(device, c["dtype"]).requires_grad_(True) for t in x]
    st = [t.to(device).requires_grad_(True) for t in s0] if c["states"] else None
    o, final = getattr(hla, c["op"])(*leaves, initial_state=None if st is None else tuple(st),
                                     output_final_state=True, **opts)
    loss = (o.float() * g.to(device)).sum()
    if c["states"]:
        loss = loss + sum((f * w.to(device)).sum() for f, w in zip(final, h))
    loss.backward()
    return [t.grad.float().cpu().numpy() for t in leaves + (st or [])]


if sys.argv[1] == "prep":
    import hla.distributed
    with functional.recorded_compiles() as records:
        for name, c in CASES.items():
            np.savez(os.path.join(sys.argv[2], name + ".npz"), *grads(c, "cpu"))
    # torch 2 passes zeros (not None) for an unused final state: the
    # backward with the final state's cotangent too.
    for name, c in CASES.items():
        opts = {"decay": 0.99} if c["op"] != "hla3" else {}
        attrs = functional._check_options(c["op"], c["d"],
                                          hla.distributed.options_of(c["op"], opts))
        shapes = [(2, 2) + s for _, s in functional.state_components(
            c["op"], c["d"], c["d"], attrs)]
        dt = {torch.float32: "f32", torch.bfloat16: "bf16"}[c["dtype"]]
        text = functional.build_ir(c["op"], [(2, 100, 2, c["d"])] * 3, [dt] * 3, attrs,
                                   shapes if c["states"] else [], shapes, None)
        records.append((text, {"vjp": True, "entry": "attend"}))
    for text, opts in records:
        compiler.precompile(text, "cuda", **{k: v for k, v in opts.items() if v is not None})
    print("prepared", len(records))
else:
    for name, c in CASES.items():
        try:
            got = grads(c, "cuda")
            want = np.load(os.path.join(sys.argv[2], name + ".npz"))
            errs = [float(np.linalg.norm(a - want[f"arr_{i}"]) / np.linalg.norm(want[f"arr_{i}"]))
                    for i, a in enumerate(got)]
            print(json.dumps({"case": name, "rel_err": errs,
                              "finite": [bool(np.isfinite(a).all()) for a in got]}), flush=True)
        except Exception as e:
            print(json.dumps({"case": name, "error": str(e)[:300]}), flush=True)
            break
