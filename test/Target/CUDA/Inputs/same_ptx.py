"""Compares the PTX of every gpu.binary in an MLIR file with PTX files.

    same_ptx.py MODULE.mlir PREFIX

For each `gpu.binary @NAME` whose object holds PTX (`assembly = "..."`),
reads PREFIX.NAME.ptx (or PREFIX.ptx when there is one binary) and prints
"same NAME" or "DIFFERENT NAME" (exit 1).
"""

import re
import sys


def unescape(text):
    # MLIR prints non-printable bytes, quotes and backslashes as \XX (hex).
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def main(module_path, prefix):
    text = open(module_path).read()
    binaries = re.findall(r'gpu\.binary @(\w+)\s+\[.*?assembly = "((?:[^"\\]|\\.)*)"', text)
    if not binaries:
        print("no PTX in", module_path)
        return 1
    status = 0
    for name, escaped in binaries:
        path = f"{prefix}.ptx" if len(binaries) == 1 else f"{prefix}.{name}.ptx"
        same = open(path).read() == unescape(escaped)
        print(("same " if same else "DIFFERENT ") + name)
        status |= 0 if same else 1
    return status


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
