"""One rank of a test_distributed.py case (run as a script).

argv: port rank world case_json out_dir. The case names the op, its
keywords, the whole sequence's shapes and seed and the span lengths; every
rank builds the same whole inputs from the seed, keeps its span, runs
hla.distributed.<op> over the gloo group and saves its output rows and the
final state to out_dir/<rank>.npz (or the error it raised, as text).
"""

import json
import traceback
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import hla  # noqa: E402
import hla.reference  # noqa: E402
import hla.distributed  # noqa: E402


def whole_inputs(case):
    """The whole sequence's operands and initial state (numpy, f32)."""
    rng = np.random.default_rng(case["seed"])
    B, T, H, D, Dv = case["B"], case["T"], case["H"], case["D"], case["Dv"]
    arrays = {"q": rng.standard_normal((B, T, H, D)) * 0.5,
              "k": rng.standard_normal((B, T, H, D)) * 0.5,
              "v": rng.standard_normal((B, T, H, Dv))}
    if case["op"] == "kda":
        k = arrays["k"]
        arrays["k"] = k / np.linalg.norm(k, axis=-1, keepdims=True)
        arrays["g"] = -rng.uniform(0.01, 0.3, (B, T, H, D))
        arrays["beta"] = rng.uniform(0.1, 0.9, (B, T, H))
    if case["op"] == "linsimp":
        arrays["r"] = rng.standard_normal((B, T, H, D)) * 0.5
        arrays["u"] = rng.standard_normal((B, T, H, Dv))
    arrays = {n: a.astype(np.float32) for n, a in arrays.items()}
    state = None
    if case.get("initial_state"):
        operands = [arrays["q"], arrays["k"], arrays["v"]]
        if case["op"] == "linsimp":
            operands.append(whole_omega(case))
        options = dict(case["options"])
        if case["op"] == "linsimp":
            options.setdefault("kernel", "favor")
        sequences = len(case["cu"]) - 1 if case.get("cu") else B
        shapes = hla.functional.state_shapes(case["op"], operands, options, sequences)
        state = tuple((rng.standard_normal(s) * 0.1).astype(np.float32) for s in shapes)
        if case["op"] == "linsimp":  # validity: 0 or 1
            state = state[:-1] + ((rng.uniform(size=shapes[-1]) < 0.5).astype(np.float32),)
    return arrays, state


def cotangents(case, o_shape, state_shapes):
    """The whole sequence's output cotangent and the final state's."""
    rng = np.random.default_rng(case["seed"] + 1)
    g = rng.standard_normal(o_shape).astype(np.float32)
    h = [rng.standard_normal(s).astype(np.float32) for s in state_shapes]
    return g, h


def backward_rank(case, fn, named, state, rank, lo, hi, out):
    """Rank `rank`'s gradients of sum(g * o) + sum(h * final) (the final
    state's term on rank 0 only: the loss is the sum of the ranks')."""
    leaves = {n: t.clone().requires_grad_(True) for n, t in named.items()}
    s0 = [torch.from_numpy(x).requires_grad_(True) for x in state or ()]
    extra = {n: t for n, t in leaves.items() if n not in ("q", "k", "v")}
    o, final = fn(leaves["q"], leaves["k"], leaves["v"], **extra, **case["options"],
                  chunk_size=case.get("chunk_size"), initial_state=tuple(s0) or None,
                  output_final_state=True)
    whole = (case["B"], case["T"]) + tuple(o.shape[2:])
    g, h = cotangents(case, whole, [f.shape for f in final])
    loss = (o * torch.from_numpy(g[:, lo:hi])).sum()
    if rank == 0:
        loss = loss + sum((f * torch.from_numpy(w)).sum() for f, w in zip(final, h))
    loss.backward()
    np.savez(out / f"{rank}.npz", **{f"d{n}": t.grad.numpy() for n, t in leaves.items()},
             **{f"ds{i}": x.grad.numpy() for i, x in enumerate(s0)})


def whole_omega(case):
    return hla.reference.linsimp_omega(case["m"], case["D"], seed=5).astype(np.float32)


def main():
    port, rank, world = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    case = json.loads(sys.argv[4])
    out = pathlib.Path(sys.argv[5])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        arrays, state = whole_inputs(case)
        spans = case["spans"]
        lo = sum(spans[:rank])
        hi = lo + spans[rank]
        if case.get("bad_heads") and rank == 1:
            arrays = {n: a[:, :, :1] for n, a in arrays.items()}
        if case.get("bad_dtype") and rank == 1:
            arrays["v"] = arrays["v"].astype(np.float64)
        named = {n: torch.from_numpy(np.ascontiguousarray(a[:, lo:hi]))
                 for n, a in arrays.items()}
        if case["op"] == "linsimp":
            named["omega"] = torch.from_numpy(whole_omega(case))
        fn = getattr(hla.distributed, case["op"])
        if case.get("backward"):
            backward_rank(case, fn, named, state, rank, lo, hi, out)
            return
        with torch.no_grad():
            result = fn(named.pop("q"), named.pop("k"), named.pop("v"), **named,
                        **case["options"], chunk_size=case.get("chunk_size"),
                        initial_state=None if state is None
                        else tuple(torch.from_numpy(s) for s in state),
                        cu_seqlens=None if not case.get("cu")
                        else torch.tensor(case["cu"], dtype=torch.int64),
                        output_final_state=True)
        o, final = result
        np.savez(out / f"{rank}.npz", o=o.numpy(),
                 **{f"s{i}": s.numpy() for i, s in enumerate(final)})
    except Exception as e:  # reported to the test, which asserts on it
        (out / f"{rank}.err").write_text(f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
