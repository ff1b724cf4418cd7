"""The ctypes DLPack consumer: pointers, layouts, dtypes, ownership."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from hla import dlpack

from .api_util import needs_cuda, needs_torch, torch


def test_numpy_view():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    view = dlpack.borrow(x)
    assert view.data == x.ctypes.data
    assert view.device == ("cpu", 0)
    assert view.dtype == "f32" and view.itemsize == 4
    assert view.shape == (2, 3, 4) and view.strides == (12, 4, 1)
    assert view.is_contiguous


def test_numpy_strided_and_offset():
    base = np.arange(2 * 5 * 3 * 4, dtype=np.float16).reshape(2, 5, 3, 4)
    view = dlpack.borrow(base.transpose(0, 2, 1, 3))
    assert view.shape == (2, 3, 5, 4) and view.strides == (60, 4, 12, 1)
    assert not view.is_contiguous
    sliced = base[1, 2:]  # starts inside the buffer
    view = dlpack.borrow(sliced)
    assert view.data == sliced.ctypes.data == base.ctypes.data + (60 + 24) * 2
    assert view.dtype == "f16" and view.is_contiguous


def test_size_one_dimensions_do_not_break_contiguity():
    x = np.zeros((4, 1, 3), np.float32)
    # Same memory, but an arbitrary stride on the size-1 axis.
    y = np.lib.stride_tricks.as_strided(x, shape=(4, 1, 3), strides=(12, 1000, 4))
    assert dlpack.borrow(y).is_contiguous


@pytest.mark.parametrize("dtype,name", [(np.int32, "i32"), (np.int64, "i64"),
                                        (np.float64, "f64"), (np.uint16, "u16")])
def test_numpy_dtypes(dtype, name):
    assert dlpack.borrow(np.zeros(3, dtype)).dtype == name


def test_borrow_leaves_the_capsule_to_its_producer():
    """We never rename the capsule, so the producer's destructor frees it:
    once our view is gone the exported array can be collected."""
    x = np.ones(1000, np.float32)
    ref = weakref.ref(x)
    view = dlpack.borrow(x)
    del x
    gc.collect()
    assert ref() is not None  # the view keeps the array alive
    del view
    gc.collect()
    assert ref() is None


def test_not_dlpack():
    with pytest.raises(TypeError, match="does not support DLPack"):
        dlpack.borrow([1, 2, 3])


@needs_torch
class TestTorch:
    def test_pointer_and_bf16(self):
        x = torch.randn(2, 3, 4).bfloat16()
        view = dlpack.borrow(x)
        assert view.data == x.data_ptr()
        assert view.dtype == "bf16" and view.itemsize == 2
        assert view.shape == (2, 3, 4) and view.is_contiguous

    def test_transposed_view(self):
        x = torch.randn(2, 3, 5, 4)  # [B, H, T, D]
        view = dlpack.borrow(x.transpose(1, 2))
        assert view.shape == (2, 5, 3, 4) and view.strides == (60, 4, 20, 1)
        assert not view.is_contiguous
        assert view.data == x.data_ptr()

    def test_storage_offset(self):
        x = torch.arange(20, dtype=torch.float32)
        view = dlpack.borrow(x[5:])
        assert view.data == x.data_ptr() + 5 * 4

    def test_capsule_released(self):
        x = torch.ones(100)
        ref = weakref.ref(x)
        view = dlpack.borrow(x)
        del view, x
        gc.collect()
        assert ref() is None


@needs_cuda
def test_cuda_tensor():
    x = torch.randn(3, 4, device="cuda")
    view = dlpack.borrow(x, stream=1)
    assert view.device == ("cuda", x.device.index or 0)
    assert view.data == x.data_ptr()
