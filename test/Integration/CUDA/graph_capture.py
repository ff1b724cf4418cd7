#!/usr/bin/env python3
"""A CUDA artefact called inside a CUDA-graph capture (on the GPU machine).

    graph_capture.py LIBRARY.so

The call must either be captured correctly (replaying the graph gives the
outputs of a plain call) or return a non-zero status with a clear message
from hla_last_error; either way the process goes on and the next plain call
gives the right outputs. Prints PASS or FAIL and exits non-zero on FAIL.
"""

import sys

import torch

from entry_call import Entry  # noqa: E402 (beside this file)


def main(path):
    entry = Entry(path)
    tensors = entry.random_inputs()
    entry.use_current_stream()
    clean = entry.output_buffers()
    assert entry(tensors, clean) == 0, entry.last_error()
    torch.cuda.synchronize()

    captured = entry.output_buffers()
    graph = torch.cuda.CUDAGraph()
    status, message, capture_error = None, None, None
    try:
        with torch.cuda.graph(graph):
            entry.use_current_stream()
            status = entry(tensors, captured)
            message = entry.last_error()
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
    entry.use_current_stream()
    again = entry.output_buffers()
    rc = entry(tensors, again)
    torch.cuda.synchronize()
    same = rc == 0 and all(torch.equal(a, b) for a, b in zip(again, clean))
    verdict.append((f"next plain call rc={rc}", same))
    passed = all(ok for _, ok in verdict)
    for what, ok in verdict:
        print(f"{'PASS' if ok else 'FAIL'} graph-capture: {what}", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
