#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# One full run on the GPU machine (the device tool's `run`, from the
# repository root, with `carry: [".device"]`): the CUDA API tests, the
# backward's checks under compute-sanitizer, and the backward benchmark, each
# log under $OUT. The GPU machine has no LLVM: everything it runs is built
# here first, into the ignored folder .device/:
#
#   bash scripts/setup.sh
#   mkdir -p .device/lib .device/shared .device/cache
#   cp -r ../shared/bench ../shared/peers .device/shared/
#   cp build/lib/libHLACAPI.so .device/lib/
#   cp -L /usr/lib/llvm-22/lib/libomp.so.5 .device/lib/
#   (cd python && HLA_TEST_CACHE_DIR=$PWD/../.device/cache \
#      /usr/bin/python3 -m tests.test_api_cuda --seed)
#   /usr/bin/python3 bench/backward_bench.py build .device/bb
#   # and, for the forward: bench/peers_bench.py build .device/pb [...]
#
# (the test cache is keyed by the libHLACAPI.so that filled it: copy that
# one). Arguments name backward_bench check cases to run under memcheck and
# racecheck (default: the first runs case and the first value-tile case).
# PARTS (default "api sanitize backward peers") picks the steps, so that a
# session can spread them over calls of the device tool's 10 minutes.
set -uo pipefail
parts=" ${PARTS:-api sanitize backward peers} "
want() { [[ "$parts" == *" $1 "* ]]; }
export PYTHONUNBUFFERED=1
root="$(pwd)"
out="${OUT:-/tmp/gpu-session}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.device/lib:${LD_LIBRARY_PATH:-}"
export HLA_LIBRARY_DIR="$root/.device/lib"
export HLA_TEST_CACHE_DIR="$root/.device/cache"
export FLA_PARENT="$root/.device/shared/bench"

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/gpu.txt" 2>&1

if want api; then
  echo "== CUDA API tests"
  (cd python && timeout 300 python3 -m pytest -q -rs tests/test_api_cuda.py) \
    >"$out/api.txt" 2>&1
  tail -3 "$out/api.txt"
fi

# The check cases asked for, else the first built with each opt-in form.
cases=("$@")
if ((${#cases[@]} == 0)); then
  mapfile -t cases < <(python3 - "$root/.device/bb/cases.json" <<'EOF'
import json, sys
checks = json.load(open(sys.argv[1]))["checks"]
for form in ("--cuda-schedule=segmented", "--value-tile=16"):
    named = [c["name"] for c in checks if form in c.get("flags", [])]
    if named:
        print(named[0])
EOF
  )
fi
if want sanitize; then
  echo "== compute-sanitizer on ${cases[*]:-no case}"
  for name in "${cases[@]}"; do
    for tool in memcheck racecheck; do
      echo "-- $tool $name"
      timeout 120 compute-sanitizer --tool "$tool" \
        python3 bench/backward_bench.py check .device/bb "$name" 2>&1 | tail -4
    done
  done >"$out/sanitize.txt" 2>&1
  grep -E "^--|ERROR SUMMARY|RACECHECK SUMMARY|FAIL" "$out/sanitize.txt"
fi

if want backward; then
  echo "== backward benchmark"
  timeout 420 python3 bench/backward_bench.py run .device/bb >"$out/backward_bench.txt" 2>&1
  grep -E "FAIL|refused" "$out/backward_bench.txt"
  tail -14 "$out/backward_bench.txt"
fi

if want peers && { [ -f .device/pb/cases.json ] || [ -f .device/pb/provenance.json ]; }; then
  echo "== forward against the peers"
  timeout 300 python3 bench/peers_bench.py run .device/pb >"$out/peers_bench.txt" 2>&1
  tail -20 "$out/peers_bench.txt"
fi
