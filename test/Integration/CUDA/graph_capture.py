#!/usr/bin/env python3
"""A CUDA artefact called inside a CUDA-graph capture (on the GPU machine).

    graph_capture.py LIBRARY.so

The call must either be captured correctly (replaying the graph gives the
outputs of a plain call) or return a non-zero status with a clear message
from hla_last_error; either way the process goes on and the next plain call
gives the right outputs. Prints PASS or FAIL and exits non-zero on FAIL.
"""

import ctypes
import sys

import torch

from run_cases import parse_signature  # noqa: E402 (beside this file)

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def main(path):
    lib = ctypes.CDLL(path)
    sig = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "hla_main_signature")))
    _, ins, outs = parse_signature(sig.decode())
    fn = lib.hla_main
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
    fn.restype = ctypes.c_int32
    lib.hla_last_error.restype = ctypes.c_char_p
    lib.hla_cuda_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]

    def use_stream():
        lib.hla_cuda_set_stream(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1)

    torch.manual_seed(0)
    tensors = [(torch.randn(shape, device="cuda") * 0.3).to(DTYPES[dt]) for dt, shape in ins]

    def buffers():
        return [torch.full(shape, float("nan"), device="cuda", dtype=DTYPES[dt])
                for dt, shape in outs]

    def pointers(ts):
        return (ctypes.c_void_p * len(ts))(*[t.data_ptr() for t in ts])

    use_stream()
    clean = buffers()
    assert fn(pointers(tensors), pointers(clean)) == 0, lib.hla_last_error()
    torch.cuda.synchronize()

    captured = buffers()
    graph = torch.cuda.CUDAGraph()
    status, message, capture_error = None, None, None
    try:
        with torch.cuda.graph(graph):
            use_stream()
            status = fn(pointers(tensors), pointers(captured))
            message = lib.hla_last_error()
    except Exception as e:  # torch reports an invalidated capture here
        capture_error = repr(e)[:300]
    torch.cuda.synchronize()
    verdict = []
    if status == 0 and capture_error is None:
        graph.replay()
        torch.cuda.synchronize()
        same = all(torch.equal(a, b) for a, b in zip(captured, clean))
        verdict.append(("captured and replayed", same))
    else:
        ok = status not in (None, 0) and bool(message)
        verdict.append((f"refused: status={status} message={message!r} "
                        f"capture={capture_error}", ok))

    # The next plain call works.
    use_stream()
    again = buffers()
    rc = fn(pointers(tensors), pointers(again))
    torch.cuda.synchronize()
    same = rc == 0 and all(torch.equal(a, b) for a, b in zip(again, clean))
    verdict.append((f"next plain call rc={rc}", same))
    passed = all(ok for _, ok in verdict)
    for what, ok in verdict:
        print(f"{'PASS' if ok else 'FAIL'} graph-capture: {what}", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
