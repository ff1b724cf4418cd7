#!/usr/bin/env python3
"""A CUDA artefact first called with the device memory exhausted (on the GPU
machine).

    out_of_memory.py LIBRARY.so

PyTorch and then the driver (in small blocks) take all the device memory
they can get before the artefact's first call (which loads its kernels and
allocates its temporaries: a segmented artefact allocates its runs'
summaries, so it must be refused). That call must
either complete correctly or return a non-zero status whose message
(hla_last_error) says the device is out of memory; either way the process
goes on, and once the memory is given back the next calls succeed and
agree with each other. Prints PASS or FAIL and exits non-zero on FAIL.
"""

import ctypes
import sys

import torch

from entry_call import Entry  # noqa: E402 (beside this file)


def exhaust():
    """Holds every block of device memory torch can allocate, largest first,
    then what its allocator's granularity leaves, by the driver's
    cuMemAlloc in 64 KiB steps. Returns a function that gives it back."""
    held, size = [], 1 << 34
    while size >= 1 << 20:
        try:
            held.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            size //= 2
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    driver.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    small = []
    while len(small) < 1 << 16:
        pointer = ctypes.c_uint64()
        if driver.cuMemAlloc_v2(ctypes.byref(pointer), 1 << 16) != 0:
            break
        small.append(pointer.value)

    def release():
        for pointer in small:
            driver.cuMemFree_v2(pointer)
        held.clear()
        torch.cuda.empty_cache()
    return release


def main(path):
    entry = Entry(path)
    entry.use_current_stream()
    tensors = entry.random_inputs()
    starved = entry.output_buffers()
    release = exhaust()
    free, total = torch.cuda.mem_get_info()
    status = entry(tensors, starved)
    message = entry.last_error()
    torch.cuda.synchronize()
    release()

    verdict = [(f"memory held: {total - free} of {total} bytes, {free} free", True)]
    clean = entry.output_buffers()
    rc = entry(tensors, clean)
    again = entry.output_buffers()
    rc2 = entry(tensors, again)
    torch.cuda.synchronize()
    finite = all(bool(torch.isfinite(t.float()).all()) for t in clean)
    verdict.append((f"calls after the memory is back: rc={rc}, rc={rc2}, finite={finite}",
                    rc == 0 and rc2 == 0 and finite
                    and all(torch.equal(a, b) for a, b in zip(clean, again))))
    if status == 0:
        verdict.append(("the starved call completed and agrees with the later ones",
                        all(torch.equal(a, b) for a, b in zip(starved, clean))))
    else:
        verdict.append((f"the starved call refused: status={status} message={message!r}",
                        "out of memory" in message.lower()))
    passed = all(ok for _, ok in verdict)
    for what, ok in verdict:
        print(f"{'PASS' if ok else 'FAIL'} out-of-memory: {what}", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
