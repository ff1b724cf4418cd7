"""LinSimp's seeded random feature matrix (SEMANTICS.md §5, docs/RandomFeatures.md).

``random_features(m, d, seed)`` is the ``[m, d]`` matrix Ω that the op
``hla.random_features {seed}`` becomes in the compiler, bit for bit: the
same SplitMix64 stream, Box-Muller pairs, two-pass Gram-Schmidt and sums
in the same order, each operation rounded on its own (pure Python floats;
the C++ side is compiled without fused multiply-adds). Needs only the
standard library; NumPy is used for the result array when present.
"""

import math

_MASK = (1 << 64) - 1
_TWO_PI = 6.283185307179586
_MAX_ELEMENTS = 1 << 24


class _NormalStream:
    """Standard normal numbers from a SplitMix64 stream (both values of
    each Box-Muller pair, cosine first)."""

    def __init__(self, seed):
        self.state = seed & _MASK
        self.spare = None

    def _bits(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def next(self):
        if self.spare is not None:
            x, self.spare = self.spare, None
            return x
        # 53-bit uniforms in (0, 1), offset by half a step (log stays finite).
        u1 = ((self._bits() >> 11) + 0.5) * 2.0 ** -53
        u2 = ((self._bits() >> 11) + 0.5) * 2.0 ** -53
        radius = math.sqrt(-2.0 * math.log(u1))
        angle = _TWO_PI * u2
        self.spare = radius * math.sin(angle)
        return radius * math.cos(angle)


def random_features_list(m, d, seed=0):
    """Ω as a list of m rows (lists of d floats)."""
    for name, value in (("m", m), ("d", d), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"random_features: {name} must be an int, got {value!r}")
    if m < 1 or d < 1:
        raise ValueError(f"random_features: needs m >= 1 and d >= 1, got m={m}, d={d}")
    if m * d > _MAX_ELEMENTS:
        raise ValueError(f"random_features: at most 2^24 elements, got m*d={m * d}")
    if seed < 0 or seed >= 1 << 63:
        raise ValueError(f"random_features: seed must be in [0, 2^63), got {seed}")
    normal = _NormalStream(seed)
    rows = []
    while len(rows) < m:
        g = [normal.next() for _ in range(d * d)]  # row-major d x d
        basis = []
        for j in range(d):
            column = [g[i * d + j] for i in range(d)]
            for _ in range(2):
                for q in basis:
                    dot = 0.0
                    for i in range(d):
                        dot += q[i] * column[i]
                    for i in range(d):
                        column[i] -= dot * q[i]
            norm = 0.0
            for i in range(d):
                norm += column[i] * column[i]
            norm = math.sqrt(norm)
            basis.append([x / norm for x in column])
        rows.extend(basis[:m - len(rows)])
    for row in rows:
        squares = 0.0
        for _ in range(d):
            x = normal.next()
            squares += x * x
        scale = math.sqrt(squares)
        for i in range(d):
            row[i] *= scale
    return rows


def random_features(m, d, seed=0):
    """Ω [m, d] as a float64 NumPy array (see the module docstring)."""
    import numpy as np
    return np.array(random_features_list(m, d, seed), dtype=np.float64)
