#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# The main job: set up and build, then compile the example model graph (a
# transformer block with a second-order HLA attention sublayer) to a CPU
# executable and run it on random inputs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

example="$root/examples/transformer_block.mlir"
out="$root/build/examples"
mkdir -p "$out"
echo "== compiling $example"
"$root/build/bin/hla-opt" "$example" --hla-target=cpu --emit=exe \
  -o "$out/transformer_block"
echo "== running it on random inputs (outputs in $out/run)"
"$out/transformer_block" --random 0 -o "$out/run"
"$out/transformer_block" --random 0 --bench 10
"${PYTHON:-/usr/bin/python3}" - "$out/run/out0.npy" <<'PY'
import sys
import numpy as np
y = np.load(sys.argv[1])
print(f"output {sys.argv[1]}: shape {y.shape}, dtype {y.dtype}, "
      f"finite {bool(np.isfinite(y).all())}, mean |y| {float(np.abs(y).mean()):.4g}")
PY
