"""The caller's array library, seen through one small interface.

Outputs are allocated, strided inputs copied and states cast *in the
caller's library* (numpy arrays stay numpy, torch tensors stay torch on their
device); only data pointers cross into compiled code, read with the DLPack
consumer of ``hla.dlpack``. torch is never imported here: a tensor can only
be a torch tensor if the caller already imported torch.
"""

from __future__ import annotations

import sys

import numpy as np

from . import dlpack

# How many contiguous copies of strided inputs were made (tests read it to
# check that dense inputs go through without one).
copy_count = 0

_NUMPY_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
                 "i32": np.int32, "i64": np.int64}
_NUMPY_NAMES = {np.dtype(v): k for k, v in _NUMPY_DTYPES.items()}


_torch = None


def remember_torch(module):
    """Called once torch ops are registered: later checks read a plain
    global, which torch.compile traces without trouble."""
    global _torch
    _torch = module


def torch_module():
    """The torch module if the process already imported it, else None."""
    if _torch is not None:
        return _torch
    return sys.modules.get("torch")


class NumpyArrays:
    name = "numpy"

    @staticmethod
    def owns(x):
        return isinstance(x, np.ndarray)

    @staticmethod
    def dtype_name(x):
        return _NUMPY_NAMES.get(x.dtype, str(x.dtype))

    @staticmethod
    def device(x):
        return "cpu"

    @staticmethod
    def is_contiguous(x):
        return x.flags.c_contiguous

    @staticmethod
    def contiguous(x):
        global copy_count
        if x.flags.c_contiguous:
            return x
        copy_count += 1
        return np.ascontiguousarray(x)

    @staticmethod
    def empty(shape, dtype, device="cpu"):
        if dtype == "bf16":
            raise TypeError("numpy has no bfloat16: pass float32 or float16 arrays")
        return np.empty(tuple(shape), _NUMPY_DTYPES[dtype])

    @staticmethod
    def cast(x, dtype):
        return x.astype(_NUMPY_DTYPES[dtype])

    @staticmethod
    def as_index_array(values, device="cpu"):
        return np.asarray(values, dtype=np.int64)

    @staticmethod
    def to_list(x):
        return x.tolist()

    @staticmethod
    def largest_positive(x):
        """The largest entry of ``x`` if some entry is > 0, else None (NaN
        is not > 0)."""
        positive = x[x > 0]
        return float(positive.max()) if positive.size else None

    @staticmethod
    def borrow(x):
        try:
            return dlpack.borrow(x)
        except BufferError:
            # numpy < 2 refuses to export read-only arrays (DLPack 0.x cannot
            # say "read-only"); compiled code only reads inputs, so their
            # address from the array interface is as good.
            if x.flags.writeable:
                raise
            return _ReadOnlyNumpy(x)


class _ReadOnlyNumpy:
    """The fields of dlpack.Borrowed for a read-only numpy array."""

    def __init__(self, x):
        self.owner = x
        self.data = x.__array_interface__["data"][0]
        self.device = ("cpu", 0)
        self.dtype = NumpyArrays.dtype_name(x)
        self.shape = tuple(x.shape)
        self.is_contiguous = x.flags.c_contiguous
        self.read_only = True


class TorchArrays:
    name = "torch"
    _names = None

    @classmethod
    def _dtype_names(cls):
        if cls._names is None:
            torch = torch_module()
            cls._names = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
                          torch.float64: "f64", torch.int32: "i32", torch.int64: "i64"}
            cls._dtypes = {v: k for k, v in cls._names.items()}
        return cls._names

    @staticmethod
    def owns(x):
        torch = torch_module()
        return torch is not None and isinstance(x, torch.Tensor)

    @classmethod
    def dtype_name(cls, x):
        return cls._dtype_names().get(x.dtype, str(x.dtype).replace("torch.", ""))

    @staticmethod
    def device(x):
        return str(x.device)

    @staticmethod
    def is_contiguous(x):
        return x.is_contiguous()

    @staticmethod
    def contiguous(x):
        global copy_count
        if x.is_contiguous():
            return x
        copy_count += 1
        return x.contiguous()

    @classmethod
    def empty(cls, shape, dtype, device="cpu"):
        cls._dtype_names()
        return torch_module().empty(tuple(shape), dtype=cls._dtypes[dtype], device=device)

    @classmethod
    def cast(cls, x, dtype):
        cls._dtype_names()
        return x.to(cls._dtypes[dtype])

    @staticmethod
    def as_index_array(values, device="cpu"):
        torch = torch_module()
        return torch.as_tensor(values, dtype=torch.int64, device=device)

    @staticmethod
    def to_list(x):
        return x.tolist()

    @staticmethod
    def largest_positive(x):
        """As NumpyArrays.largest_positive (one reduction and one host sync
        for a CUDA tensor)."""
        x = x.detach()
        mask = x > 0
        if not bool(mask.any()):
            return None
        return float(x[mask].max())

    @staticmethod
    def borrow(x):
        # torch refuses to export tensors that require grad; compiled code
        # never takes part in autograd, so the detached alias is what we read.
        x = x.detach()
        if x.device.type == "cuda":
            # The consumer's stream: the DLPack producer makes it wait for
            # work already queued on the tensor's stream.
            # DLPack reserves 0; the legacy default stream is spelled 1.
            stream = torch_module().cuda.current_stream(x.device).cuda_stream
            return dlpack.borrow(x, stream=stream if stream != 0 else 1)
        return dlpack.borrow(x)


def library_of(x):
    """NumpyArrays or TorchArrays for an array of that library, else None."""
    if isinstance(x, np.ndarray):
        return NumpyArrays
    if TorchArrays.owns(x):
        return TorchArrays
    return None


def as_array(x, what):
    """``x`` as an array of a library we allocate in.

    numpy arrays and torch tensors are returned unchanged. Other objects
    with ``__dlpack__`` (CuPy, JAX, ...) on the CPU are viewed as numpy arrays
    without copying (``np.from_dlpack``); lists and scalars go through
    ``np.asarray``. Results then come back as numpy arrays.
    """
    if library_of(x) is not None:
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError, ValueError) as e:
            raise TypeError(f"{what}: cannot read {type(x).__name__} through DLPack as a "
                            f"CPU array ({e}); pass a numpy array or a torch tensor") from e
    if isinstance(x, (list, tuple)) or np.isscalar(x):
        return np.asarray(x)
    raise TypeError(f"{what} must be a numpy array, a torch tensor or a DLPack tensor, "
                    f"got {type(x).__name__}")
