#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# The main job: set up and build, then compile the example model graph (a
# transformer block with a second-order HLA attention sublayer) to a CPU
# executable, run it, and check its output against the block in float64.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

example="$root/examples/transformer_block.mlir"
out="$root/build/examples"
mkdir -p "$out"
echo "== compiling $example (--mlir-timing shows where the time goes)"
start=$SECONDS
"$root/build/bin/hla-opt" "$example" --hla-target=cpu --emit=exe \
  -o "$out/transformer_block"
echo "compiled in $((SECONDS - start)) s"
python="${PYTHON:-/usr/bin/python3}"
echo "== running it on inputs drawn like a trained block's (outputs in $out/run)"
inputs=$("$python" "$root/examples/transformer_block.py" inputs "$out/inputs")
"$out/transformer_block" $inputs -o "$out/run"
echo "== checking it against the block in float64 (NumPy, hla.reference)"
"$python" "$root/examples/transformer_block.py" check "$out/inputs" "$out/run/out0.npy"
echo "== time per call, median of 20 (ms)"
"$out/transformer_block" $inputs --bench 20
