#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Every test: set up and build, then the lit suite (FileCheck, diagnostics,
# examples) and the Python tests (float64 references) with Debian's python3
# (or $PYTHON).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

echo "== lit"
cmake --build "$root/build" --target check-hla
echo "== pytest"
cd "$root"
"${PYTHON:-/usr/bin/python3}" -m pytest -q python/tests
