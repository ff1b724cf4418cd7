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
start=$(date +%s)
cmake --build "$root/build" --target check-hla
echo "== pytest (lit took $(($(date +%s) - start)) s)"
cd "$root"
python="${PYTHON:-/usr/bin/python3}"
# A worker per core where pytest-xdist is installed (scripts/setup.sh
# installs it; HLA_TEST_JOBS overrides the count, 0 runs in this process).
jobs=()
if "$python" -c "import xdist" 2>/dev/null; then
  jobs=(-n "${HLA_TEST_JOBS:-$(nproc)}")
fi
"$python" -m pytest -q "${jobs[@]}" python/tests
