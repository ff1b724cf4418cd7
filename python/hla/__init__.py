"""hla: higher-order linear attention compiled through MLIR.

`hla.reference` holds the float64 NumPy reference implementations of every
attention operator; their meaning is fixed by SEMANTICS.md.
"""

from . import reference  # noqa: F401
