"""Calling compiled hla artefacts from Python (ctypes, no extension module).

A shared library made by ``hla-opt --emit=shared`` (or ``hla.compile``)
exports, for every public function ``f`` of the model graph::

    int32_t hla_f(void *const *inputs, void *const *outputs);
    const char hla_f_signature[];   /* "f|dtype:AxB,...|dtype:..." */
    const char *hla_last_error(void);

``inputs`` and ``outputs`` point to dense row-major buffers of the types and
shapes the signature lists (dtype f32, f16, bf16, f64, i32 or i64).
``hla_f`` returns non-zero when a run-time check (e.g. of ``cu_seqlens``)
or, for CUDA, a driver call failed; ``hla_last_error`` then has the message
(per thread). Calls raise ``hla.RuntimeError`` with it; the library stays
usable.
``load(path)`` returns a ``CompiledLibrary`` whose attributes are callables.

Arguments may be numpy arrays or torch tensors (on the CPU); results come
back in the same library (torch if any argument is a torch tensor). Dense
arguments are passed by pointer (read through DLPack, see ``hla.dlpack``);
strided ones are first copied to a dense array of their own library.
bfloat16 with numpy, which has no bfloat16: inputs travel as float arrays
rounded to nearest even, outputs come back widened to float32. torch
bfloat16 tensors are passed as they are.

CUDA artefacts (``--hla-target=cuda``, recognised by their
``hla_cuda_set_stream`` export) take device pointers: their functions take
torch CUDA tensors on device 0 (the device hla's CUDA runtime opens) and
launch on torch's current stream, so no host synchronisation is needed.

Nothing here needs the compiler library, only the artefact.
"""

from __future__ import annotations

import builtins
import ctypes
import os
import re
import threading

import numpy as np

from . import _tensors

_NUMPY = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
          "i32": np.int32, "i64": np.int64, "bf16": np.uint16}


class RuntimeError(builtins.RuntimeError):  # noqa: A001 (named after the builtin)
    """A compiled function failed at run time (a failed run-time check of
    its inputs, or a CUDA driver error); the message is the runtime's. The
    library stays usable: the next call starts afresh."""


class TensorSpec:
    """dtype (hla name) and shape of one argument or result."""

    def __init__(self, text):
        dtype, _, dims = text.partition(":")
        if dtype not in _NUMPY:
            raise ValueError(f"unknown dtype in signature: {text!r}")
        self.dtype = dtype
        self.shape = tuple(int(d) for d in dims.split("x")) if dims else ()

    def __repr__(self):
        return f"{self.dtype}{list(self.shape)}"


def parse_signature(text):
    """'f|f32:2x3,...|...' -> (name, [TensorSpec], [TensorSpec])."""
    name, inputs, outputs = text.split("|")
    split = lambda s: [TensorSpec(t) for t in s.split(",")] if s else []
    return name, split(inputs), split(outputs)


def _to_bf16_bits(x):
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)


def _from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


class CompiledFunction:
    """One exported function: call it with numpy arrays or torch tensors."""

    def __init__(self, library, name):
        lib = library._lib
        signature = ctypes.c_char.in_dll(lib, f"hla_{name}_signature")
        text = ctypes.string_at(ctypes.addressof(signature)).decode()
        self.name, self.inputs, self.outputs = parse_signature(text)
        self._fn = getattr(lib, f"hla_{name}")
        self._fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
        self._fn.restype = ctypes.c_int32
        self._library = library  # the handle must outlive the function pointer
        self.device = library.device

    def __repr__(self):
        return (f"<hla {self.device} function {self.name}{tuple(self.inputs)} -> "
                f"{tuple(self.outputs)}>")

    def call_pointers(self, inputs, outputs, stream=None):
        """Runs the function on raw addresses (ints), one per input/output.

        No checks: the caller guarantees dense buffers of the signature's
        dtypes and shapes (device buffers for a CUDA artefact) that stay
        alive for the call. ``stream``: the CUstream handle (an int, 0 for
        the legacy default stream) a CUDA artefact launches on.
        """
        ins = (ctypes.c_void_p * max(len(inputs), 1))(*inputs)
        outs = (ctypes.c_void_p * max(len(outputs), 1))(*outputs)
        if self.device == "cuda":
            # The stream is the library's global: hold it for set + launch.
            with self._library._stream_lock:
                self._library._set_stream(ctypes.c_void_p(stream or None), 1)
                status = self._fn(ins, outs)
                message = self._library._last_error() if status else None
        else:
            status = self._fn(ins, outs)
            # The message is thread-local: read it on the calling thread.
            message = self._library._last_error() if status else None
        if status:
            text = message.decode(errors="replace") if message else "unknown failure"
            raise RuntimeError(f"{self.name}: {text}")

    def _check(self, index, spec, seen, what):
        """Raises unless a borrowed/array view matches ``spec`` (dtype, shape)."""
        if seen.dtype != spec.dtype:
            raise TypeError(f"{self.name}: {what} {index} must be {spec.dtype}, got {seen.dtype}")
        if tuple(seen.shape) != spec.shape:
            raise ValueError(f"{self.name}: {what} {index} must have shape {list(spec.shape)}, "
                             f"got {list(seen.shape)}")
        if self.device == "cpu" and seen.device[0] != "cpu":
            raise ValueError(f"{self.name}: {what} {index} is on {seen.device[0]}, but compiled "
                             f"CPU code reads host memory")
        if self.device == "cuda" and seen.device != ("cuda", 0):
            raise ValueError(f"{self.name}: {what} {index} is on {seen.device[0]}:"
                             f"{seen.device[1]}, but this CUDA artefact runs on cuda:0 (the "
                             f"device hla's CUDA runtime opens)")

    def _prepare_numpy(self, index, spec, array):
        array = np.asarray(array)
        if spec.dtype == "bf16":
            if array.dtype not in (np.float32, np.float64, np.float16):
                raise TypeError(f"{self.name}: input {index}: expected a float array for "
                                f"bfloat16 input, got {array.dtype}")
            return _to_bf16_bits(array)
        want = np.dtype(_NUMPY[spec.dtype])
        if array.dtype != want:
            raise TypeError(f"{self.name}: input {index}: expected {want}, got {array.dtype}")
        return _tensors.NumpyArrays.contiguous(array)

    def __call__(self, *arrays, out=None):
        if len(arrays) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} inputs, got {len(arrays)}")
        arrays = [_tensors.as_array(a, f"{self.name}: input {i}") for i, a in enumerate(arrays)]
        use_torch = any(_tensors.library_of(a) is _tensors.TorchArrays for a in arrays)
        if self.device == "cuda" and not use_torch:
            raise TypeError(f"{self.name} is CUDA code: pass torch CUDA tensors")
        lib = _tensors.TorchArrays if use_torch else _tensors.NumpyArrays
        if use_torch:
            for i, a in enumerate(arrays):
                if _tensors.library_of(a) is not lib:
                    raise TypeError(f"{self.name}: input {i} is a {type(a).__name__}; pass "
                                    f"torch tensors for every input or for none")
            prepared = [lib.contiguous(a) for a in arrays]
        else:
            prepared = [self._prepare_numpy(i, s, a)
                        for i, (s, a) in enumerate(zip(self.inputs, arrays))]
        device = "cuda:0" if self.device == "cuda" else "cpu"
        if out is None:
            if use_torch:
                results = [lib.empty(s.shape, s.dtype, device) for s in self.outputs]
            else:
                results = [np.empty(s.shape, _NUMPY[s.dtype]) for s in self.outputs]
        else:
            results = list(out)
            if len(results) != len(self.outputs):
                raise TypeError(f"{self.name} has {len(self.outputs)} outputs, "
                                f"got {len(results)} in out=")
        # Borrow everything first: a bad argument must raise before any call.
        in_views = [lib.borrow(a) for a in prepared]
        out_views = []
        for j, r in enumerate(results):
            rlib = _tensors.library_of(r)
            if rlib is None:
                raise TypeError(f"{self.name}: output {j} must be a numpy array or torch tensor")
            view = rlib.borrow(r)
            if not view.is_contiguous or view.read_only:
                raise ValueError(f"{self.name}: output {j} must be a dense, writable array")
            out_views.append(view)
        for what, specs, views in (("input", self.inputs, in_views),
                                   ("output", self.outputs, out_views)):
            for i, (spec, view) in enumerate(zip(specs, views)):
                if spec.dtype == "bf16" and view.dtype == "u16":
                    # numpy bfloat16: uint16 words (rounded above, widened below)
                    if tuple(view.shape) != spec.shape:
                        raise ValueError(f"{self.name}: {what} {i} must have shape "
                                         f"{list(spec.shape)}, got {list(view.shape)}")
                    continue
                self._check(i, spec, view, what)
        stream = None
        if self.device == "cuda":
            stream = _tensors.torch_module().cuda.current_stream(device).cuda_stream
        self.call_pointers([v.data for v in in_views], [v.data for v in out_views], stream)
        del in_views, out_views
        if not use_torch:
            results = [(_from_bf16_bits(r) if s.dtype == "bf16" else r)
                       for s, r in zip(self.outputs, results)]
        return results[0] if len(results) == 1 else tuple(results)


_PUBLIC_FUNCTION = re.compile(r"func\.func\s+(?!private\b)@([A-Za-z_][\w$.]*)")


class CompiledLibrary:
    """A loaded shared library; its functions are attributes.

    ``names`` (optional) lists the functions it is known to export, for
    ``dir()`` and ``functions()``; ``hla.compile`` takes them from the IR.
    """

    def __init__(self, path, names=None):
        self.path = os.path.abspath(path)
        self._lib = ctypes.CDLL(self.path)
        self._functions = {}
        self._names = list(names) if names is not None else None
        try:
            self._last_error = self._lib.hla_last_error
        except AttributeError as e:
            raise OSError(f"{self.path} is not an hla artefact of this version (it has no "
                          f"hla_last_error; recompile it)") from e
        self._last_error.argtypes = []
        self._last_error.restype = ctypes.c_char_p
        try:
            self._set_stream = self._lib.hla_cuda_set_stream
        except AttributeError:
            self._set_stream = None
            self.device = "cpu"
        else:
            self._set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
            self._set_stream.restype = None
            self._stream_lock = threading.Lock()
            self.device = "cuda"

    def function(self, name):
        if name not in self._functions:
            try:
                self._functions[name] = CompiledFunction(self, name)
            except (AttributeError, ValueError) as e:
                raise AttributeError(f"{self.path} exports no hla function '{name}'") from e
        return self._functions[name]

    def functions(self):
        """Names of the exported functions, when known (else [])."""
        return list(self._names or [])

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.function(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._names or []))

    def __repr__(self):
        return (f"<hla.CompiledLibrary {self.device} {self.path} "
                f"functions={self.functions()}>")


def public_functions(ir_text):
    """Names of the public ``func.func``s in MLIR text (what an artefact exports)."""
    return _PUBLIC_FUNCTION.findall(ir_text)


def load(path, names=None):
    return CompiledLibrary(path, names)
