"""What the GPU benchmarks share: timing as torch_anchors.py does it, and
calling an hla CUDA library on torch tensors (needs torch with CUDA)."""

import ctypes
import re
import subprocess

SASS_MNEMONICS = ["HGMMA", "HMMA", "LDL", "STL", "LDS", "STS", "LDG", "STG", "BAR", "FFMA"]


def sass_mix(cubin):
    """Counts of the instructions that matter in a cubin's SASS (cuobjdump),
    and of all instructions."""
    r = subprocess.run(["cuobjdump", "--dump-sass", cubin], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-300:]}
    counts = {m: len(re.findall(r"\b" + m + r"\b[.\w]*", r.stdout)) for m in SASS_MNEMONICS}
    counts["instructions"] = len(re.findall(r"/\*[0-9a-f]{4}\*/", r.stdout))
    return counts


def median_ms(fn, warm=3, rep=20):
    """Median of `rep` timed calls (CUDA events) after `warm` untimed ones."""
    import torch
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rep):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(); fn(); end.record(); torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def hla_call(path, inputs, outputs):
    """A no-argument callable running `hla_main` of the shared library at
    `path` on the device pointers of `inputs` and `outputs` (contiguous
    torch CUDA tensors, kept alive by the caller), on torch's current
    stream."""
    import torch
    lib = ctypes.CDLL(path)
    lib.hla_cuda_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.hla_cuda_set_stream(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1)
    fn = lib.hla_main
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
    fn.restype = ctypes.c_int32
    lib.hla_last_error.restype = ctypes.c_char_p
    ins = (ctypes.c_void_p * len(inputs))(*[t.data_ptr() for t in inputs])
    outs = (ctypes.c_void_p * len(outputs))(*[t.data_ptr() for t in outputs])

    def call():
        # The entry returns a status (0: done); the message is the runtime's.
        if fn(ins, outs) != 0:
            raise RuntimeError(f"{path}: {lib.hla_last_error().decode()}")
    return call
