"""Inputs for examples/transformer_block.mlir and its float64 meaning.

    transformer_block.py inputs DIR     writes x.npy and the weights to DIR
    transformer_block.py check DIR OUT  compares OUT (the executable's
                                        out0.npy) with float64 NumPy

Weights are drawn as a trained model's would be scaled (N(0, 1/fan_in),
norm gains 1), so the block's output has the size of its input. The
reference is the graph's definition on hla.reference.hla2 (default scale
d^-1/2, masked, unnormalised).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from hla import reference as ref  # noqa: E402

T, D, HEADS, F = 200, 64, 2, 128
NAMES = ["x", "g_attn", "w_q", "w_k", "w_v", "w_o", "g_mlp", "w_1", "w_2"]


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)

    def weight(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(np.float32)

    return {"x": rng.standard_normal((T, D)).astype(np.float32),
            "g_attn": np.ones(D, np.float32),
            "w_q": weight(D, D), "w_k": weight(D, D), "w_v": weight(D, D),
            "w_o": weight(D, D), "g_mlp": np.ones(D, np.float32),
            "w_1": weight(D, F), "w_2": weight(F, D)}


def block(a):
    """The block in float64: pre-norm HLA2 attention and a SiLU MLP."""
    a = {k: v.astype(np.float64) for k, v in a.items()}

    def rmsnorm(x, g):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g

    def heads(x):
        return x.reshape(1, T, HEADS, D // HEADS)

    xn = rmsnorm(a["x"], a["g_attn"])
    q, k, v = (heads(xn @ a[w]) for w in ("w_q", "w_k", "w_v"))
    attn = np.asarray(ref.hla2(q, k, v)).reshape(T, D)
    h = a["x"] + attn @ a["w_o"]
    up = rmsnorm(h, a["g_mlp"]) @ a["w_1"]
    return h + (up / (1 + np.exp(-up))) @ a["w_2"]


def main(argv):
    if len(argv) == 3 and argv[1] == "inputs":
        os.makedirs(argv[2], exist_ok=True)
        for name, value in make_inputs().items():
            np.save(os.path.join(argv[2], name + ".npy"), value)
        print(" ".join(os.path.join(argv[2], n + ".npy") for n in NAMES))
        return 0
    if len(argv) == 4 and argv[1] == "check":
        inputs = {n: np.load(os.path.join(argv[2], n + ".npy")) for n in NAMES}
        y, want = np.load(argv[3]).astype(np.float64), block(inputs)
        error = np.abs(y - want).max() / np.abs(want).max()
        print(f"output {y.shape} {np.load(argv[3]).dtype}: max |y - y_float64| / max |y_float64| "
              f"= {error:.2e} (max |y_float64| = {np.abs(want).max():.3g})")
        return 0 if error < 1e-4 else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
