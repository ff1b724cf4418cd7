"""Writes good and bad .npy inputs for executable-cli.test."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
shape = (1, 200, 2, 32)
for name in "qkv":
    np.save(os.path.join(out, f"{name}.npy"), rng.standard_normal(shape).astype(np.float32) * 0.2)
np.save(os.path.join(out, "q64.npy"), rng.standard_normal(shape))
np.save(os.path.join(out, "short.npy"), rng.standard_normal((1, 199, 2, 32)).astype(np.float32))
with open(os.path.join(out, "k.npy"), "rb") as f:
    data = f.read()
with open(os.path.join(out, "truncated.npy"), "wb") as f:
    f.write(data[: len(data) // 2])
with open(os.path.join(out, "garbage.npy"), "wb") as f:
    f.write(b"this is not a numpy file at all")
