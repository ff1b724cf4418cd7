#!/usr/bin/env python3
"""Runs the CUDA cases compiled by build_cases.py on the GPU and checks them
against the float64 references of python/hla/reference.py.

    run_cases.py CASEDIR [--log FILE] [--only SUBSTRING] [--seed N]

Each case: fresh random inputs (the run's seed is printed); the output and final states are poisoned
(NaN) before the call; the kernel runs through the library's C ABI on
device pointers (torch allocations); the relative error ‖out − ref‖/‖ref‖
of every output must stay within the case's tolerance. The executable built
alongside runs on .npy files. Needs numpy, torch with CUDA, and a GPU.
Exit status 1 if any case fails.
"""

import argparse
import ctypes
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def load_reference():
    # Loaded by path: the package's __init__ may want more than numpy.
    spec = importlib.util.spec_from_file_location(
        "hla_reference", os.path.join(REPO, "python", "hla", "reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = load_reference()


def load_random_features():
    spec = importlib.util.spec_from_file_location(
        "hla_random_features", os.path.join(REPO, "python", "hla", "random_features.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.random_features


random_features = load_random_features()
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                "i32": torch.int32, "i64": torch.int64, "f64": torch.float64}


def relative_error(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def parse_signature(text):
    name, ins, outs = text.split("|")

    def specs(s):
        out = []
        for t in s.split(",") if s else []:
            dtype, _, dims = t.partition(":")
            out.append((dtype, tuple(int(x) for x in dims.split("x")) if dims else ()))
        return out
    return name, specs(ins), specs(outs)


class Library:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        sig = ctypes.c_char.in_dll(self.lib, "hla_main_signature")
        self.name, self.inputs, self.outputs = parse_signature(
            ctypes.string_at(ctypes.addressof(sig)).decode())
        self.fn = self.lib.hla_main
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
        self.fn.restype = ctypes.c_int32
        self.last_error = self.lib.hla_last_error
        self.last_error.restype = ctypes.c_char_p
        set_stream = self.lib.hla_cuda_set_stream
        set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
        set_stream(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1)

    def __call__(self, *tensors):
        outs = [torch.full(shape, float("nan"), dtype=TORCH_DTYPES[dt], device="cuda")
                for dt, shape in self.outputs]
        for t, (dt, shape) in zip(tensors, self.inputs):
            assert t.is_cuda and t.is_contiguous() and tuple(t.shape) == shape, (t.shape, shape)
            assert t.dtype == TORCH_DTYPES[dt], (t.dtype, dt)
        ins = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
        outp = (ctypes.c_void_p * len(outs))(*[o.data_ptr() for o in outs])
        torch.cuda.synchronize()
        if self.fn(ins, outp) != 0:
            raise RuntimeError(f"hla_main: {self.last_error().decode()}")
        torch.cuda.synchronize()
        return outs


def make_inputs(rng, c):
    def draw(shape, scale):
        x = rng.standard_normal(shape) * scale
        return np.abs(x) if c["positive"] else x
    B, T, hq, hkv, d, dv = c["B"], c["T"], c["hq"], c["hkv"], c["d"], c["dv"]
    q = draw((B, T, hq, d), d ** -0.5)
    k = draw((B, T, hkv, d), d ** -0.5)
    v = rng.standard_normal((B, T, hkv, dv))
    return q, k, v


def run_linsimp_case(c, casedir, rng):
    lib = Library(os.path.join(casedir, c["name"] + ".so"))
    B, T, hq, hkv, d, dv = c["B"], c["T"], c["hq"], c["hkv"], c["d"], c["dv"]
    dtype = TORCH_DTYPES[c["dtype"]]

    def draw(T):
        return [0.5 * rng.standard_normal((B, T, hq, d)),
                0.5 * rng.standard_normal((B, T, hkv, d)),
                rng.standard_normal((B, T, hkv, dv)),
                0.5 * rng.standard_normal((B, T, hkv, d)),
                rng.standard_normal((B, T, hkv, dv))]

    xs = draw(T) + [random_features(c["m"], d, 1)]
    # Inputs rounded to the case's dtype on the device; the reference gets
    # the rounded values.
    tensors = [torch.from_numpy(x).to(dtype).cuda().contiguous() for x in xs]
    xs = [t.double().cpu().numpy() for t in tensors]
    kwargs = dict(omega=xs[5], window=c["window"],
                  kernel=c["options"].get("kernel", "favor"))
    if c["state"]:
        # One state per sequence, each left by a short prefix.
        n = len(c["cu_seqlens"]) - 1 if c["cu_seqlens"] else B
        parts = []
        for _ in range(n):
            prev = [x[:1] for x in draw(7)]
            parts.append(ref.linsimp(*prev, omega=xs[5], window=c["window"],
                                     output_final_state=True)[1])
        state = [np.concatenate([p[i] for p in parts]).astype(np.float32)
                 for i in range(5)]
        tensors += [torch.from_numpy(s).cuda() for s in state]
        kwargs.update(initial_state=tuple(s.astype(np.float64) for s in state),
                      output_final_state=True)
    if c["cu_seqlens"]:
        cu = np.array(c["cu_seqlens"], np.int32)
        tensors.append(torch.from_numpy(cu).cuda())
        kwargs["cu_seqlens"] = cu
    outs = lib(*tensors)
    expected = ref.linsimp(*xs[:5], **kwargs)
    wants = [expected[0], *expected[1]] if c["state"] else [expected]
    errors = [relative_error(o.float().cpu().numpy(), w) for o, w in zip(outs, wants)]
    if c.get("poison"):
        errors.append(poison_error(c, lib, tensors, range(5), outs[0]))
    return max(errors)


def run_kda_case(c, casedir, rng):
    lib = Library(os.path.join(casedir, c["name"] + ".so"))
    B, T, hq, hkv, d, dv = c["B"], c["T"], c["hq"], c["hkv"], c["d"], c["dv"]
    dtype = TORCH_DTYPES[c["dtype"]]
    q = rng.standard_normal((B, T, hq, d)) * d ** -0.5
    k = rng.standard_normal((B, T, hkv, d))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((B, T, hkv, dv))
    g = -np.abs(rng.standard_normal((B, T, hkv, d))) * 0.2
    for t, h, channel in c.get("zero_decays", []):
        g[:, t, h, channel] = -np.inf
    beta = rng.uniform(0.1, 0.9, (B, T, hkv))
    tensors = [torch.from_numpy(x).to(dtype).cuda().contiguous() for x in (q, k, v, g, beta)]
    q, k, v, g, beta = (t.double().cpu().numpy() for t in tensors)
    kwargs = {"scale": c["options"]["scale"]} if "scale" in c["options"] else {}
    if c["state"]:
        n = len(c["cu_seqlens"]) - 1 if c["cu_seqlens"] else B
        s0 = (rng.standard_normal((n, hq, d, dv)) * 0.3).astype(np.float32)
        tensors.append(torch.from_numpy(s0).cuda())
        kwargs.update(initial_state=(s0.astype(np.float64),), output_final_state=True)
    if c["cu_seqlens"]:
        cu = np.array(c["cu_seqlens"], np.int32)
        tensors.append(torch.from_numpy(cu).cuda())
        kwargs["cu_seqlens"] = cu
    outs = lib(*tensors)
    expected = ref.kda(q, k, v, g=g, beta=beta, **kwargs)
    wants = [expected[0], *expected[1]] if c["state"] else [expected]
    errors = [relative_error(o.float().cpu().numpy(), w) for o, w in zip(outs, wants)]
    if c.get("poison"):
        errors.append(poison_error(c, lib, tensors, range(5), outs[0]))
    return max(errors)


def poison_error(c, lib, tensors, token_inputs, clean):
    """Causal isolation: NaN or inf at token t of each token input leaves
    outputs [:, :t] finite and equal to the clean run's `clean` (the first
    output); returns the largest relative difference (inf if not finite)."""
    T = c["T"]
    worst = 0.0
    for i in token_inputs:
        for t, value in [(T // 2 + 3, float("nan")), (c["chunk"] or 64, float("inf")),
                         (T - 1, float("-inf"))]:
            poisoned = [x.clone() for x in tensors]
            poisoned[i][0, t] = value
            out = lib(*poisoned)[0][:, :t].float().cpu().numpy()
            want = clean[:, :t].float().cpu().numpy()
            if not np.all(np.isfinite(out)):
                return float("inf")
            scale = max(float(np.abs(want).max()), 1e-30)
            worst = max(worst, float(np.abs(out - want).max()) / scale)
    return worst


def run_case(c, casedir, seed):
    rng = np.random.default_rng(seed)
    if c["op"] == "linsimp":
        return run_linsimp_case(c, casedir, rng)
    if c["op"] == "kda":
        return run_kda_case(c, casedir, rng)
    lib = Library(os.path.join(casedir, c["name"] + ".so"))
    q, k, v = make_inputs(rng, c)
    dtype = TORCH_DTYPES[c["dtype"]]
    # The device sees the inputs rounded to their dtype; the reference gets
    # the same rounded values in float64.
    tq, tk, tv = (torch.from_numpy(x).to(dtype).cuda().contiguous() for x in (q, k, v))
    if c.get("misaligned"):
        # Inputs one element past a 16-byte boundary: no TMA tensor map can
        # address them, and the kernels copy their tiles with their threads.
        def shifted(t):
            flat = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
            view = flat[1:].view(t.shape)
            view.copy_(t)
            assert view.data_ptr() % 16 != 0
            return view
        tq, tk, tv = (shifted(t) for t in (tq, tk, tv))
    q, k, v = (t.double().cpu().numpy() for t in (tq, tk, tv))
    args = [tq, tk, tv]
    kwargs = dict(c["options"])
    state = None
    if c["state"]:
        # With positive inputs (the normalised cases) the states are
        # positive too, as a real prefix would leave them: a random-sign
        # normaliser state can bring the denominator near zero.
        state = tuple((np.abs(x) if c["positive"] else x).astype(np.float32)
                      for x in (rng.standard_normal(s) * 0.2 for s in c["state_shapes"]))
        args += [torch.from_numpy(s).cuda() for s in state]
        kwargs["initial_state"] = tuple(s.astype(np.float64) for s in state)
        kwargs["output_final_state"] = True
    if c["cu_seqlens"]:
        cu = np.array(c["cu_seqlens"], np.int32)
        args.append(torch.from_numpy(cu).cuda())
        kwargs["cu_seqlens"] = cu
    if c.get("head_decay"):
        # A rate per query head, one of them 1 (no decay), in random order.
        rates = rng.permutation(np.concatenate(
            [[1.0], rng.uniform(0.6, 0.99, c["hq"] - 1)])).astype(np.float32)
        args.append(torch.from_numpy(rates).cuda())
        kwargs["decay"] = rates.astype(np.float64)
    outs = lib(*args)
    expected = getattr(ref, c["op"])(q, k, v, **kwargs)
    if c["state"]:
        expected, final = expected
        wants = [expected, *final]
    else:
        wants = [expected]
    errors = [relative_error(o.float().cpu().numpy(), w) for o, w in zip(outs, wants)]
    if c.get("poison"):
        errors.append(poison_error(c, lib, args, range(3), outs[0]))
    return max(errors)


def run_exe(exe_case, casedir):
    """The executable: .npy inputs in, .npy outputs out, through its main."""
    rng = np.random.default_rng(7)
    q, k, v = make_inputs(rng, exe_case)
    q, k, v = (x.astype(np.float32) for x in (q, k, v))
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, a in enumerate((q, k, v)):
            paths.append(os.path.join(tmp, f"in{i}.npy"))
            np.save(paths[-1], a)
        exe = os.path.join(casedir, "hla2-exe")
        r = subprocess.run([exe, *paths, "-o", os.path.join(tmp, "out")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return float("inf"), r.stderr
        out = np.load(os.path.join(tmp, "out", "out0.npy"))
        bench = subprocess.run([exe, "--random", "1", "--bench", "20"],
                               capture_output=True, text=True)
    expected = ref.hla2(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                        **exe_case["options"])
    return relative_error(out, expected), bench.stdout.strip() + bench.stderr.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("casedir")
    ap.add_argument("--log", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=None,
                    help="the inputs' seed (default: a fresh one, printed)")
    args = ap.parse_args()
    # Fresh inputs every run; the seed is printed so that a failure can be
    # run again with the same inputs (--seed).
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    print("seed", seed, flush=True)
    with open(os.path.join(args.casedir, "manifest.json")) as f:
        manifest = json.load(f)
    print("device", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    rows, failures = [], 0
    for c in manifest["cases"]:
        if args.only not in c["name"]:
            continue
        start = time.time()
        try:
            err = run_case(c, args.casedir, (seed + zlib.crc32(c["name"].encode())) % 2 ** 32)
            detail = ""
        except Exception as e:  # a crash is a failure of that case
            err, detail = float("inf"), repr(e)[:300]
        ok = err <= c["tol"]
        failures += not ok
        line = (f"{'PASS' if ok else 'FAIL'} {c['name']:28s} err={err:.2e} "
                f"tol={c['tol']:.0e} {time.time() - start:5.2f}s {detail}")
        print(line, flush=True)
        rows.append(dict(name=c["name"], err=err, tol=c["tol"], ok=ok, detail=detail))
    if not args.only or args.only in "hla2-exe":
        err, bench = run_exe(manifest["exe"], args.casedir)
        ok = err <= manifest["exe"]["tol"]
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {'hla2-exe (npy in/out)':28s} err={err:.2e} {bench}",
              flush=True)
        rows.append(dict(name="hla2-exe", err=err, ok=ok, detail=bench))
    print(f"{len(rows) - failures} passed, {failures} failed", flush=True)
    if args.log:
        with open(args.log, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
