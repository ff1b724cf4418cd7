# RUN: %PYTHON %s | FileCheck %s
"""Tests that the hla Python package imports from the source tree under lit
and that its hla2 reference equals the masked matrix form of SEMANTICS.md §2
on a small random input."""

import numpy as np

import hla.reference as ref

rng = np.random.default_rng(7)
q, k, v = (rng.standard_normal((1, 9, 1, 4)) * 0.5 for _ in range(3))
o = ref.hla2(q, k, v, scale=1.0)[0, :, 0]
Q, K, V = q[0, :, 0], k[0, :, 0], v[0, :, 0]
L = np.tril(np.ones((9, 9)))
W = L * (Q @ K.T)
expected = ((W @ W.T) * L) @ V
err = np.linalg.norm(o - expected) / np.linalg.norm(expected)
# CHECK: hla2 matches the matrix form: True
print("hla2 matches the matrix form:", err < 1e-12)
