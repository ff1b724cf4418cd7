#!/usr/bin/env python3
"""Extract the payload of the first #gpu.object in a gpu.binary (MLIR textual form).
Usage: extract_gpu_binary.py in.mlir out.file   (handles assembly="..", bin="..", offload="..", or bare "..")"""
import re, sys
txt = open(sys.argv[1], encoding='latin-1').read()
m = re.search(r'#gpu\.object<.*?(?:assembly = |bin = |offload = |\}, )"((?:[^"\\]|\\.)*)"', txt, re.S)
if not m:
    sys.exit("no gpu.object payload found")
s, out, i = m.group(1), bytearray(), 0
while i < len(s):
    c = s[i]
    if c == '\\':
        nxt = s[i+1]
        if nxt in '\\"':
            out.append(ord(nxt)); i += 2
        else:
            out.append(int(s[i+1:i+3], 16)); i += 3
    else:
        out += c.encode('latin-1'); i += 1
open(sys.argv[2], 'wb').write(out)
print(f"wrote {len(out)} bytes to {sys.argv[2]}")
