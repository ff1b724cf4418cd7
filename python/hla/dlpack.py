"""A small DLPack consumer in ctypes: tensors in, data pointers out.

``borrow(x)`` calls ``x.__dlpack__()`` and reads the ``DLManagedTensor`` the
capsule holds (data pointer + byte offset, device, dtype, shape, strides)
without taking ownership of it. That is the DLPack convention for a consumer
that only looks: the capsule keeps its name ``"dltensor"``, so when the
``Borrowed`` object (and with it the capsule) is garbage-collected, the
*producer's* capsule destructor calls the tensor's deleter. A consumer that
took ownership would rename the capsule ``"used_dltensor"`` and then owe the
deleter call itself; we never do, so nothing can be freed twice or leak.

While a ``Borrowed`` is alive, the memory it points to is kept alive by the
capsule (through the producer's ``manager_ctx``) and by ``Borrowed.owner``.

Both the classic capsule (``"dltensor"``, ``DLManagedTensor``) and the
DLPack 1.x one (``"dltensor_versioned"``, ``DLManagedTensorVersioned``) are
understood; calling ``__dlpack__()`` without ``max_version`` asks producers
for the classic one, which every producer still gives.
"""

from __future__ import annotations

import ctypes

# DLDeviceType values we name (dlpack.h).
CPU = 1
CUDA = 2
CUDA_HOST = 3
CUDA_MANAGED = 13
DEVICE_NAMES = {CPU: "cpu", CUDA: "cuda", CUDA_HOST: "cuda_host", 4: "opencl", 7: "vulkan",
                8: "metal", 9: "vpi", 10: "rocm", 11: "rocm_host", 12: "ext_dev",
                CUDA_MANAGED: "cuda_managed", 14: "oneapi", 15: "webgpu", 16: "hexagon"}

# DLDataTypeCode -> the dtype names of artefact signatures.
_INT, _UINT, _FLOAT, _BFLOAT = 0, 1, 2, 4
_DTYPE_NAMES = {(_FLOAT, 32): "f32", (_FLOAT, 16): "f16", (_FLOAT, 64): "f64",
                (_BFLOAT, 16): "bf16", (_INT, 32): "i32", (_INT, 64): "i64",
                (_INT, 8): "i8", (_INT, 16): "i16", (_UINT, 8): "u8", (_UINT, 16): "u16",
                (_UINT, 32): "u32", (_UINT, 64): "u64", (6, 8): "bool"}

_READ_ONLY_FLAG = 1  # DLPACK_FLAG_BITMASK_READ_ONLY of DLManagedTensorVersioned.flags


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("device", _DLDevice),
                ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor),
                ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion),
                ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter),
                ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


_capsule_get_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_get_name.restype = ctypes.c_char_p
_capsule_get_name.argtypes = [ctypes.py_object]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Borrowed:
    """What one ``__dlpack__()`` capsule describes, kept alive with it.

    data      address of element [0, ..., 0] (byte_offset already added)
    device    (device type name, device id), e.g. ("cpu", 0), ("cuda", 1)
    dtype     signature name ("f32", "bf16", "i64", ...) or "code:bits:lanes"
    shape     tuple of ints
    strides   tuple of element strides (row-major ones when the producer
              gave none)
    read_only whether the producer flagged the memory read-only (1.x only)
    """

    __slots__ = ("owner", "_capsule", "data", "device", "dtype", "itemsize", "shape",
                 "strides", "read_only")

    def __init__(self, owner, capsule, tensor, read_only):
        self.owner = owner
        self._capsule = capsule
        self.data = (tensor.data or 0) + tensor.byte_offset
        kind = tensor.device.device_type
        self.device = (DEVICE_NAMES.get(kind, f"device{kind}"), tensor.device.device_id)
        dt = tensor.dtype
        self.dtype = (_DTYPE_NAMES.get((dt.code, dt.bits), f"{dt.code}:{dt.bits}:{dt.lanes}")
                      if dt.lanes == 1 else f"{dt.code}:{dt.bits}:{dt.lanes}")
        self.itemsize = dt.bits * dt.lanes // 8
        ndim = tensor.ndim
        self.shape = tuple(tensor.shape[i] for i in range(ndim))
        if tensor.strides:
            self.strides = tuple(tensor.strides[i] for i in range(ndim))
        else:
            self.strides = row_major_strides(self.shape)
        self.read_only = read_only

    @property
    def is_contiguous(self):
        """Dense row-major: what the artefact ABI takes.

        Strides of size-1 dimensions never matter (producers put anything
        there), and an empty tensor is trivially dense.
        """
        if 0 in self.shape:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def __repr__(self):
        return (f"Borrowed(dtype={self.dtype}, shape={list(self.shape)}, "
                f"strides={list(self.strides)}, device={self.device}, data=0x{self.data:x})")


def row_major_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def borrow(x, stream=None):
    """Reads ``x.__dlpack__()`` without taking ownership (see module doc).

    ``stream`` is passed on for device tensors (the consumer's stream, per
    the DLPack protocol); CPU tensors are asked without one.
    """
    exporter = getattr(x, "__dlpack__", None)
    if exporter is None:
        raise TypeError(f"{type(x).__name__} does not support DLPack (__dlpack__)")
    capsule = exporter() if stream is None else exporter(stream=stream)
    name = _capsule_get_name(capsule)
    if name == b"dltensor":
        address = _capsule_get_pointer(capsule, name)
        managed = _DLManagedTensor.from_address(address)
        return Borrowed(x, capsule, managed.dl_tensor, read_only=False)
    if name == b"dltensor_versioned":
        address = _capsule_get_pointer(capsule, name)
        managed = _DLManagedTensorVersioned.from_address(address)
        if managed.version.major != 1:
            raise TypeError(f"unsupported DLPack version {managed.version.major}."
                            f"{managed.version.minor} from {type(x).__name__}")
        return Borrowed(x, capsule, managed.dl_tensor,
                        read_only=bool(managed.flags & _READ_ONLY_FLAG))
    raise TypeError(f"{type(x).__name__}.__dlpack__() returned a capsule named {name!r}, "
                    f"not a DLPack tensor (already consumed?)")
