"""An artefact's `hla_main` called on torch CUDA tensors, for the scripts
that probe the CUDA runtime's error paths on the GPU machine
(graph_capture.py, out_of_memory.py)."""

import ctypes

import torch

from run_cases import parse_signature  # noqa: E402 (beside this file)

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


class Entry:
    """`hla_main` of the shared library at `path`, with its signature."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        sig = ctypes.string_at(
            ctypes.addressof(ctypes.c_char.in_dll(self.lib, "hla_main_signature")))
        _, self.ins, self.outs = parse_signature(sig.decode())
        self.fn = self.lib.hla_main
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
        self.fn.restype = ctypes.c_int32
        self.lib.hla_last_error.restype = ctypes.c_char_p
        self.lib.hla_cuda_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]

    def use_current_stream(self):
        """Launches on torch's current stream (as hla's Python package does)."""
        self.lib.hla_cuda_set_stream(
            ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1)

    def random_inputs(self, seed=0):
        torch.manual_seed(seed)
        return [(torch.randn(shape, device="cuda") * 0.3).to(DTYPES[dt])
                for dt, shape in self.ins]

    def output_buffers(self):
        """NaN-filled outputs: what the entry does not write shows."""
        return [torch.full(shape, float("nan"), device="cuda", dtype=DTYPES[dt])
                for dt, shape in self.outs]

    def __call__(self, inputs, outputs):
        """The entry's status (0: done)."""
        def pointers(ts):
            return (ctypes.c_void_p * len(ts))(*[t.data_ptr() for t in ts])
        return self.fn(pointers(inputs), pointers(outputs))

    def last_error(self):
        return (self.lib.hla_last_error() or b"").decode(errors="replace")
