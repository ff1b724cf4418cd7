"""Writes .npy files with hostile or unusual headers for npy-headers.test.

Each file has a valid preamble (unless the case is about the preamble) and
a header dict as numpy writes it, with the given shape text; the data is
whatever the case needs (mostly none: the runtime must refuse the header
before it allocates or reads data).
"""
import os
import struct
import sys

import numpy as np

out = sys.argv[1]


def write(name, shape, *, descr="<f4", version=(1, 0), data=b"", length=None):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header = header.encode()
    size_bytes = 2 if version[0] == 1 else 4
    pad = 64 - (8 + size_bytes + len(header) + 1) % 64
    header += b" " * (pad % 64) + b"\n"
    declared = len(header) if length is None else length
    preamble = b"\x93NUMPY" + bytes(version)
    preamble += struct.pack("<H" if size_bytes == 2 else "<I", declared)
    with open(os.path.join(out, name), "wb") as f:
        f.write(preamble + header + data)


# With data after them: the runtime once allocated the declared size
# unchecked and read into the NULL it got.
write("negative.npy", "(1, -200, 2, 32)", data=b"\0" * 51200)
write("huge.npy", "(1, 2000000000, 2, 32)", data=b"\0" * 51200)
write("overflow.npy", "(4294967296, 4294967296, 2, 32)")
write("too-large.npy", "(1, 99999999999999999999, 2, 32)")
write("rank17.npy", "(" + ", ".join(["1"] * 17) + ")")
write("float-dim.npy", "(1, 2.5, 2, 32)")
write("word-dim.npy", "(1, two, 2, 32)")
write("version9.npy", "(1, 200, 2, 32)", version=(9, 0))
write("long-header.npy", "(1, 200, 2, 32)", length=60000)
write("huge-header.npy", "(1, 200, 2, 32)", version=(2, 0), length=0xFFFFFFFF)
# A header that matches, with data cut short: refused before allocating.
write("short-data.npy", "(1, 200, 2, 32)", data=b"\0" * 100)
# Format 3.0 (as 2.0, with a UTF-8 header), written by numpy: accepted.
rng = np.random.default_rng(0)
array = (rng.standard_normal((1, 200, 2, 32)) * 0.2).astype(np.float32)
with open(os.path.join(out, "version3.npy"), "wb") as f:
    np.lib.format.write_array(f, array, version=(3, 0))
os.makedirs(os.path.join(out, "directory.npy"), exist_ok=True)
with open(os.path.join(out, "magic-only.npy"), "wb") as f:
    f.write(b"\x93NUMPY")
