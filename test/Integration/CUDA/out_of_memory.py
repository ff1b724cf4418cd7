#!/usr/bin/env python3
"""A CUDA artefact first called with the device memory exhausted (on the GPU
machine).

    out_of_memory.py LIBRARY.so

PyTorch takes all the device memory it can get before the artefact's first
call (which loads its kernels and allocates its temporaries). That call must
either complete correctly or return a non-zero status whose message
(hla_last_error) says the device is out of memory; either way the process
goes on, and once the memory is given back the next calls succeed and
agree with each other. Prints PASS or FAIL and exits non-zero on FAIL.
"""

import ctypes
import sys

import torch

from run_cases import parse_signature  # noqa: E402 (beside this file)

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def exhaust():
    """Holds every block of device memory torch can allocate, largest first."""
    held, size = [], 1 << 34
    while size >= 1 << 20:
        try:
            held.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            size //= 2
    return held


def main(path):
    lib = ctypes.CDLL(path)
    sig = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "hla_main_signature")))
    _, ins, outs = parse_signature(sig.decode())
    fn = lib.hla_main
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
    fn.restype = ctypes.c_int32
    lib.hla_last_error.restype = ctypes.c_char_p
    lib.hla_cuda_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.hla_cuda_set_stream(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1)

    torch.manual_seed(0)
    tensors = [(torch.randn(shape, device="cuda") * 0.3).to(DTYPES[dt]) for dt, shape in ins]

    def buffers():
        return [torch.full(shape, float("nan"), device="cuda", dtype=DTYPES[dt])
                for dt, shape in outs]

    def pointers(ts):
        return (ctypes.c_void_p * len(ts))(*[t.data_ptr() for t in ts])

    starved = buffers()
    held = exhaust()
    free, total = torch.cuda.mem_get_info()
    status = fn(pointers(tensors), pointers(starved))
    message = lib.hla_last_error()
    torch.cuda.synchronize()
    del held
    torch.cuda.empty_cache()

    verdict = [(f"memory held: {total - free} of {total} bytes, {free} free", True)]
    clean = buffers()
    rc = fn(pointers(tensors), pointers(clean))
    again = buffers()
    rc2 = fn(pointers(tensors), pointers(again))
    torch.cuda.synchronize()
    finite = all(bool(torch.isfinite(t.float()).all()) for t in clean)
    verdict.append((f"calls after the memory is back: rc={rc}, rc={rc2}, finite={finite}",
                    rc == 0 and rc2 == 0 and finite
                    and all(torch.equal(a, b) for a, b in zip(clean, again))))
    if status == 0:
        verdict.append(("the starved call completed and agrees with the later ones",
                        all(torch.equal(a, b) for a, b in zip(starved, clean))))
    else:
        text = (message or b"").decode(errors="replace")
        verdict.append((f"the starved call refused: status={status} message={text!r}",
                        "out of memory" in text.lower()))
    passed = all(ok for _, ok in verdict)
    for what, ok in verdict:
        print(f"{'PASS' if ok else 'FAIL'} out-of-memory: {what}", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
