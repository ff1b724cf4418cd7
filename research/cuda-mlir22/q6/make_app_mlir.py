#!/usr/bin/env python3
"""app.mlir = the Q2b gpu.module (q2/wgmma_nvvm.mlir) + a host entry point using gpu.* runtime ops."""
src = open('../q2/wgmma_nvvm.mlir').read().rstrip()
assert src.endswith('}')
host = open('host_entry.mlir.in').read()
open('app.mlir', 'w').write(src[:-1] + host + '}\n')
