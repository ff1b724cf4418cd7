#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# The main job: set up, build, and run the compiler on the example model
# graph (a transformer block with a second-order HLA attention sublayer).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

example="$root/examples/transformer_block.mlir"
echo "== $example: attention ops expanded into the prefix-moment algebra"
"$root/build/bin/hla-opt" "$example" --hla-expand
