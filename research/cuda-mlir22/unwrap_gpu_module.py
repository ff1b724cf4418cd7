#!/usr/bin/env python3
"""Hoist the body of the (single) lowered gpu.module to the top-level builtin.module so that
`mlir-translate --mlir-to-llvmir` translates it (mlir-translate silently drops gpu.module ops).
Assumes the printed form produced by mlir-opt: gpu.module header at indent 2, closing '  }'."""
import sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('  gpu.module @'))
end = max(i for i, l in enumerate(lines) if l == '  }')
body = [l[2:] if l.startswith('  ') else l for l in lines[start+1:end]]
out = ['module {'] + body + ['}']
open(sys.argv[2], 'w').write('\n'.join(out) + '\n')
