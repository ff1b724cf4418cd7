#!/usr/bin/env python3
"""hla.distributed on the GPU: ranks on CUDA tensors against one process.

    distributed_check.py build CACHE   # here: the CUDA artefacts into CACHE
    distributed_check.py run           # on the GPU (HLA_CACHE_DIR=CACHE)

Each case splits one sequence over 2-3 processes (gloo, every rank on
cuda:0, the totals gathered through host memory), runs
hla.distributed.<op> on its span of CUDA tensors and compares the rows and
final states with one process's hla.<op> over the whole sequence on the
GPU: what the compiled CUDA summary and combine entries do. The GPU
machine has no compiler, so `build` compiles every artefact the cases ask
for (the same IR texts and options) into CACHE.
"""

import json
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

import numpy as np  # noqa: E402

import hla  # noqa: E402
import hla.distributed  # noqa: E402
from hla import compiler, functional  # noqa: E402
from hla.random_features import random_features  # noqa: E402

CASES = [
    dict(op="hla2", dtype="bf16", T=1000, spans=[500, 500]),
    dict(op="linear_attention", options={"decay": 0.99, "normalize": True}, dtype="bf16",
         T=777, spans=[100, 677], initial_state=True),
    dict(op="kda", dtype="bf16", T=900, spans=[300, 300, 300], initial_state=True),
    dict(op="hla3", dtype="bf16", T=600, spans=[300, 300]),
    dict(op="ahla", options={"decay": 0.95}, dtype="f32", T=500, spans=[250, 250]),
    dict(op="linsimp", options={"window": 16}, dtype="bf16", T=512, spans=[5, 507], m=64),
    dict(op="kda", dtype="bf16", B=1, T=1024, spans=[512, 512],
         cu=[0, 100, 600, 600, 1024], initial_state=True),
    dict(op="hla2", options={"decay": 0.99}, dtype="bf16", B=1, T=1024, spans=[256] * 4,
         cu=[0, 300, 700, 1024]),
]
# The backward across ranks (f32: the comparison is then tight): each
# rank's gradients of its rows' loss (and, on rank 0, the final state's)
# against one process's autograd of the whole loss.
# On CUDA only linear attention's (hla.distributed refuses the others
# there: hla2's transposed combine gave NaN on the H200, 2026-12-03).
BACKWARD_CASES = [
    dict(op="linear_attention", dtype="f32", T=257, spans=[128, 129], initial_state=True,
         backward=True),
    dict(op="linear_attention", options={"decay": 0.99}, dtype="f32", T=300,
         spans=[100, 100, 100], backward=True),
]
CASES = CASES + BACKWARD_CASES
B, H, D, DV = 2, 4, 64, 64
# cpu: the same checks on the CPU (to try this script where there is no GPU).
DEVICE = os.environ.get("HLA_CHECK_DEVICE", "cuda")
TOLERANCE = {"bf16": 1e-2, "f32": 1e-4}


def whole_inputs(case):
    """numpy f32 operands and initial state of the whole sequence."""
    rng = np.random.default_rng(11)
    T, B = case["T"], batch(case)
    x = {"q": rng.standard_normal((B, T, H, D)) * D ** -0.5,
         "k": rng.standard_normal((B, T, H, D)) * D ** -0.5,
         "v": rng.standard_normal((B, T, H, DV))}
    if case["op"] == "kda":
        x["k"] = x["k"] / np.linalg.norm(x["k"], axis=-1, keepdims=True)
        x["g"] = -rng.uniform(0.01, 0.2, (B, T, H, D))
        x["beta"] = rng.uniform(0.1, 0.9, (B, T, H))
    if case["op"] == "linsimp":
        x["r"] = rng.standard_normal((B, T, H, D)) * D ** -0.5
        x["u"] = rng.standard_normal((B, T, H, DV))
    x = {n: a.astype(np.float32) for n, a in x.items()}
    state = None
    if case.get("initial_state"):
        shapes = state_shapes(case)
        state = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]
    return x, state


def omega(case):
    return random_features(case["m"], D, 1).astype(np.float32)


def options(case):
    return hla.distributed.options_of(case["op"], case.get("options", {}))


def attrs(case):
    return functional._check_options(case["op"], D, options(case))


def batch(case):
    return case.get("B", B)


def sequences(case):
    return len(case["cu"]) - 1 if case.get("cu") else batch(case)


def state_shapes(case):
    m = case.get("m")
    return [(sequences(case), H) + tuple(s) for _, s in
            functional.state_components(case["op"], D, DV, attrs(case), m)]


def span_state_shapes(case):
    """A span's states: packed, one more row (the always-empty sequence)."""
    extra = 1 if case.get("cu") else 0
    return [(s[0] + extra,) + s[1:] for s in state_shapes(case)]


def operand_shapes(case, T):
    names = functional.operand_names(case["op"])
    b = batch(case)
    shapes = {"q": (b, T, H, D), "k": (b, T, H, D), "v": (b, T, H, DV), "g": (b, T, H, D),
              "beta": (b, T, H), "r": (b, T, H, D), "u": (b, T, H, DV),
              "omega": (case.get("m", 0), D)}
    return [shapes[n] for n in names]


def build(cache):
    os.environ["HLA_CACHE_DIR"] = cache
    for case in CASES:
        op, dtypes = case["op"], None
        dtypes = [case["dtype"]] * len(functional.operand_names(op))
        requests = [compile_single(case, dtypes)]
        for T in sorted(set(case["spans"])):
            requests.append(hla.distributed.compile_request(
                op, operand_shapes(case, T), dtypes, attrs(case), span_state_shapes(case),
                None if not case.get("cu") else (len(case["cu"]) + 1, "i32"), None))
        if case.get("backward"):
            requests += backward_requests(case, dtypes)
        for text, opts in requests:
            compiler.precompile(text, target="cuda", **{k: v for k, v in opts.items()
                                                         if v is not None})
        print("built", op, flush=True)


def backward_requests(case, dtypes):
    """The derived backward's artefacts: one process's (from the initial
    state when given, the final state in the loss) and each span's (from
    the state before it, without and with the final state's cotangent)."""
    shapes = state_shapes(case)
    vjp = {"vjp": True, "entry": functional.ir.FUNCTION_NAME}
    out = [(functional.build_ir(case["op"], operand_shapes(case, case["T"]), dtypes,
                                attrs(case), shapes if case.get("initial_state") else [],
                                shapes, None), vjp)]
    for T in sorted(set(case["spans"])):
        for final in ([], shapes):
            out.append((functional.build_ir(case["op"], operand_shapes(case, T), dtypes,
                                            attrs(case), shapes, final, None), vjp))
    return out


def compile_single(case, dtypes):
    shapes = state_shapes(case)
    cu = None if not case.get("cu") else (len(case["cu"]), "i64")
    text = functional.build_ir(case["op"], operand_shapes(case, case["T"]), dtypes,
                               attrs(case), shapes if case.get("initial_state") else [],
                               shapes, cu)
    return text, {}


def torch_operands(case, x, lo, hi, torch):
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[case["dtype"]]
    t = {n: torch.from_numpy(np.ascontiguousarray(a[:, lo:hi])).to(DEVICE, dtype)
         for n, a in x.items()}
    if case["op"] == "linsimp":
        t["omega"] = torch.from_numpy(omega(case)).to(DEVICE, dtype)
    return t


def call(fn, case, t, state, torch, **kw):
    q, k, v = t.pop("q"), t.pop("k"), t.pop("v")
    positional = [t.pop("r"), t.pop("u")] if case["op"] == "linsimp" else []
    initial = None if state is None else tuple(torch.from_numpy(s).to(DEVICE) for s in state)
    cu = None if not case.get("cu") else torch.tensor(case["cu"], device=DEVICE)
    return fn(q, k, v, *positional, **t, **case.get("options", {}), initial_state=initial,
              cu_seqlens=cu, output_final_state=True, **kw)


def cotangents(case, o_shape, shapes):
    rng = np.random.default_rng(12)
    return (rng.standard_normal(o_shape).astype(np.float32),
            [rng.standard_normal(s).astype(np.float32) for s in shapes])


def gradients(fn, case, t, state, torch, lo, hi, with_final):
    """The gradients of sum(g * o) (rows lo:hi) [+ sum(h * final)]."""
    leaves = {n: x.requires_grad_(True) for n, x in t.items()}
    s0 = None if state is None else [torch.from_numpy(s).to(DEVICE).requires_grad_(True)
                                     for s in state]
    o, final = fn(leaves["q"], leaves["k"], leaves["v"], **case.get("options", {}),
                  initial_state=None if s0 is None else tuple(s0), output_final_state=True)
    g, h = cotangents(case, (batch(case), case["T"]) + tuple(o.shape[2:]),
                      [f.shape for f in final])
    loss = (o * torch.from_numpy(g[:, lo:hi]).to(DEVICE)).sum()
    if with_final:
        loss = loss + sum((f * torch.from_numpy(w).to(DEVICE)).sum() for f, w in zip(final, h))
    loss.backward()
    grads = {f"d{n}": leaves[n].grad.cpu().numpy() for n in "qkv"}
    grads.update({f"ds{i}": x.grad.cpu().numpy() for i, x in enumerate(s0 or [])})
    return grads


def worker(port, rank, world, index, out):
    import torch
    import torch.distributed as dist
    case = CASES[index]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    x, state = whole_inputs(case)
    lo = sum(case["spans"][:rank])
    t = torch_operands(case, x, lo, lo + case["spans"][rank], torch)
    if case.get("backward"):
        grads = gradients(getattr(hla.distributed, case["op"]), case, t, state, torch, lo,
                          lo + case["spans"][rank], rank == 0)
        np.savez(os.path.join(out, f"{rank}.npz"), **grads)
        dist.destroy_process_group()
        return
    with torch.no_grad():
        o, final = call(getattr(hla.distributed, case["op"]), case, t, state, torch)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    np.savez(os.path.join(out, f"{rank}.npz"), o=o.float().cpu().numpy(),
             **{f"s{i}": s.cpu().numpy() for i, s in enumerate(final)})
    dist.destroy_process_group()


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def run():
    import tempfile
    import torch
    failures = 0
    only = os.environ.get("HLA_CHECK_ONLY")  # "backward": those cases alone
    for index, case in enumerate(CASES):
        if only == "backward" and not case.get("backward"):
            continue
        world = len(case["spans"])
        with tempfile.TemporaryDirectory() as out:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            procs = [subprocess.Popen([sys.executable, __file__, "worker", str(port), str(r),
                                       str(world), str(index), out])
                     for r in range(world)]
            codes = [p.wait(timeout=300) for p in procs]
            x, state = whole_inputs(case)
            if any(codes):
                print(json.dumps({"case": case, "error": f"worker exit codes {codes}"}))
                failures += 1
                continue
            parts = [np.load(os.path.join(out, f"{r}.npz")) for r in range(world)]
            if case.get("backward"):
                want = gradients(getattr(hla, case["op"]), case,
                                 torch_operands(case, x, 0, case["T"], torch), state, torch,
                                 0, case["T"], True)
                errs = {n: relative(np.concatenate([p[n] for p in parts], axis=1), want[n])
                        for n in ("dq", "dk", "dv")}
                errs.update({n: relative(sum(p[n] for p in parts), want[n])
                             for n in want if n.startswith("ds")})
                ok = max(errs.values()) <= TOLERANCE[case["dtype"]]
                failures += not ok
                print(json.dumps({"op": case["op"], "backward": True, "T": case["T"],
                                  "spans": case["spans"], "rel_err": errs, "ok": ok}),
                      flush=True)
                continue
            with torch.no_grad():
                o, final = call(getattr(hla, case["op"]), case,
                                torch_operands(case, x, 0, case["T"], torch), state, torch)
            o_split = np.concatenate([p["o"] for p in parts], axis=1)
            err_o = relative(o_split, o.float().cpu().numpy())
            err_s = max(relative(p[f"s{i}"], s.cpu().numpy())
                        for p in parts for i, s in enumerate(final))
            ok = err_o <= TOLERANCE[case["dtype"]] and err_s <= TOLERANCE[case["dtype"]]
            failures += not ok
            print(json.dumps({"op": case["op"], "dtype": case["dtype"], "T": case["T"],
                              "spans": case["spans"], "output_rel_err": err_o,
                              "final_state_rel_err": err_s, "ok": ok}), flush=True)
    ran = sum(1 for c in CASES if only != "backward" or c.get("backward"))
    print(f"{ran - failures}/{ran} cases agree")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    elif sys.argv[1] == "worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
               sys.argv[6])
    else:
        sys.exit(run())
