"""Calling compiled hla artefacts from Python (ctypes, no extension module).

A shared library made by ``hla-opt --emit=shared`` exports, for every public
function ``f`` of the model graph::

    void hla_f(void *const *inputs, void *const *outputs);
    const char hla_f_signature[];   /* "f|dtype:AxB,...|dtype:..." */

``inputs`` and ``outputs`` point to dense row-major buffers of the types and
shapes the signature lists (dtype f32, f16, bf16, f64, i32 or i64).
``load(path)`` returns a ``CompiledLibrary`` whose attributes are callables
taking and returning numpy arrays. bfloat16 travels as float32 arrays
(numpy has no bfloat16): inputs are rounded to nearest even, outputs widened.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

_NUMPY = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
          "i32": np.int32, "i64": np.int64, "bf16": np.uint16}


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
    """One exported function: call it with numpy arrays."""

    def __init__(self, lib, name):
        signature = ctypes.c_char.in_dll(lib, f"hla_{name}_signature")
        text = ctypes.string_at(ctypes.addressof(signature)).decode()
        self.name, self.inputs, self.outputs = parse_signature(text)
        self._fn = getattr(lib, f"hla_{name}")
        self._fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
        self._fn.restype = None

    def _prepare(self, index, spec, array):
        if spec.dtype == "bf16":
            array = np.asarray(array)
            if array.dtype not in (np.float32, np.float64, np.float16):
                raise TypeError(f"argument {index}: expected a float array for "
                                f"bfloat16 input, got {array.dtype}")
            array = _to_bf16_bits(array)
        else:
            array = np.asarray(array)
            want = np.dtype(_NUMPY[spec.dtype])
            if array.dtype != want:
                raise TypeError(f"argument {index}: expected {want}, got {array.dtype}")
            array = np.ascontiguousarray(array)
        if array.shape != spec.shape:
            raise ValueError(f"argument {index}: expected shape {list(spec.shape)}, "
                             f"got {list(array.shape)}")
        return array

    def __call__(self, *arrays, out=None):
        if len(arrays) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} inputs, got {len(arrays)}")
        prepared = [self._prepare(i, s, a) for i, (s, a) in enumerate(zip(self.inputs, arrays))]
        results = out if out is not None else [
            np.empty(s.shape, _NUMPY[s.dtype]) for s in self.outputs]
        ins = (ctypes.c_void_p * max(len(prepared), 1))(*[a.ctypes.data for a in prepared])
        outs = (ctypes.c_void_p * max(len(results), 1))(*[r.ctypes.data for r in results])
        self._fn(ins, outs)
        converted = [(_from_bf16_bits(r) if s.dtype == "bf16" else r)
                     for s, r in zip(self.outputs, results)]
        return converted[0] if len(converted) == 1 else tuple(converted)


class CompiledLibrary:
    """A loaded shared library; its functions are attributes."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self._lib = ctypes.CDLL(self.path)
        self._functions = {}

    def function(self, name):
        if name not in self._functions:
            try:
                self._functions[name] = CompiledFunction(self._lib, name)
            except (AttributeError, ValueError) as e:
                raise AttributeError(f"{self.path} exports no hla function '{name}'") from e
        return self._functions[name]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.function(name)


def load(path):
    return CompiledLibrary(path)
