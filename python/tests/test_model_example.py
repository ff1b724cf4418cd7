"""examples/linsimp_kda_model.mlir (the seed's no-softmax model: 18 KDA and
6 LinSimp layers with their projections, short convolutions, norms, gates
and MLPs) compiled for the CPU, run on .npy inputs and compared with a
NumPy float64 evaluation of the same model built on hla.reference; the
executable's --random path; out-of-range token ids."""

import os
import subprocess

import numpy as np
import pytest

from hla import reference as ref
from hla.random_features import random_features

from .codegen_util import REPO, compile_graph, relative_error, run_exe

MODEL = os.path.join(REPO, "examples", "linsimp_kda_model.mlir")
T, D, H, V, F, M, W, K = 64, 64, 2, 256, 128, 32, 16, 4
DH = D // H
KDA_W = [("gn", (D,)), ("wq", (D, D)), ("wk", (D, D)), ("wv", (D, D)), ("cq", (K, D)),
         ("ck", (K, D)), ("cv", (K, D)), ("wg", (D, D)), ("wb", (D, H)), ("wgate", (D, D)),
         ("wo", (D, D)), ("gm", (D,)), ("w1", (D, F)), ("w2", (F, D))]
LS_W = [("gn", (D,)), ("wq", (D, D)), ("wk", (D, D)), ("wr", (D, D)), ("wv", (D, D)),
        ("wu", (D, D)), ("cq", (K, D)), ("ck", (K, D)), ("cr", (K, D)), ("wgate", (D, D)),
        ("wo", (D, D)), ("gm", (D,)), ("w1", (D, F)), ("w2", (F, D))]


def rmsnorm(x, g):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g


def proj(x, w):
    return x @ w / np.sqrt(w.shape[0])


def silu(x):
    return x / (1 + np.exp(-x))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def conv_silu(x, w):
    padded = np.concatenate([np.zeros((K - 1, x.shape[1])), x])
    return silu(sum(w[j] * padded[j:j + len(x)] for j in range(K)))


def heads(x):
    return x.reshape(1, len(x), H, DH)


def l2heads(x):
    x = heads(x)
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + 1e-6)


def mlp(x, gm, w1, w2):
    return x + proj(silu(proj(rmsnorm(x, gm), w1)), w2)


def model(tokens, embed, kda, ls, g_final, w_out):
    x = embed[tokens]
    ki = li = 0
    for layer in range(24):
        if layer % 4 == 3:
            p = {n: ls[n][li] for n, _ in LS_W}
            n = rmsnorm(x, p["gn"])
            q, k, r = (l2heads(conv_silu(proj(n, p[w]), p[c]))
                       for w, c in (("wq", "cq"), ("wk", "ck"), ("wr", "cr")))
            v, u = heads(proj(n, p["wv"])), heads(proj(n, p["wu"]))
            omega = random_features(M, DH, layer).astype(np.float32).astype(np.float64)
            o = ref.linsimp(q, k, v, r, u, omega=omega, window=W)
            li += 1
        else:
            p = {n: kda[n][ki] for n, _ in KDA_W}
            n = rmsnorm(x, p["gn"])
            q = l2heads(conv_silu(proj(n, p["wq"]), p["cq"]))
            k = l2heads(conv_silu(proj(n, p["wk"]), p["ck"]))
            v = heads(conv_silu(proj(n, p["wv"]), p["cv"]))
            z = proj(n, p["wg"])
            g = heads(-(np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / 8)
            beta = sigmoid(proj(n, p["wb"]))[None]
            o = ref.kda(q, k, v, g=g, beta=beta)
            ki += 1
        gate = sigmoid(proj(n, p["wgate"]))
        x = x + proj(o.reshape(T, D) * gate, p["wo"])
        x = mlp(x, p["gm"], p["w1"], p["w2"])
    return proj(rmsnorm(x, g_final), w_out)


@pytest.fixture(scope="module")
def exe():
    with open(MODEL) as f:
        return compile_graph(f.read(), chunk=16)


def inputs(seed):
    rng = np.random.default_rng(seed)
    normal = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    tokens = rng.integers(0, V, T).astype(np.int32)
    kda = {n: normal(18, *s) for n, s in KDA_W}
    ls = {n: normal(6, *s) for n, s in LS_W}
    for params in (kda, ls):  # norm gains around 1
        for n in ("gn", "gm"):
            params[n] = (1 + params[n]).astype(np.float32)
    return tokens, normal(V, D), kda, ls, (1 + normal(D)).astype(np.float32), normal(D, V)


def test_model_matches_numpy(exe, tmp_path):
    tokens, embed, kda, ls, g_final, w_out = inputs(0)
    args = [tokens, embed, *[kda[n] for n, _ in KDA_W], *[ls[n] for n, _ in LS_W],
            g_final, w_out]
    (logits,) = run_exe(exe, args, tmp_path)
    assert logits.shape == (T, V)
    f64 = lambda d: {n: a.astype(np.float64) for n, a in d.items()}  # noqa: E731
    want = model(tokens, embed.astype(np.float64), f64(kda), f64(ls),
                 g_final.astype(np.float64), w_out.astype(np.float64))
    assert relative_error(logits, want) <= 1e-4


def test_random_inputs_run(exe, tmp_path):
    result = subprocess.run([exe, "--random", "3", "-o", str(tmp_path)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    logits = np.load(tmp_path / "out0.npy")
    assert logits.shape == (T, V) and np.all(np.isfinite(logits))


def test_token_out_of_range_is_reported(exe, tmp_path):
    tokens, embed, kda, ls, g_final, w_out = inputs(1)
    tokens[5] = V
    args = [tokens, embed, *[kda[n] for n, _ in KDA_W], *[ls[n] for n, _ in LS_W],
            g_final, w_out]
    with pytest.raises(RuntimeError, match=r"token ids must be in \[0, 256\)"):
        run_exe(exe, args, tmp_path)
