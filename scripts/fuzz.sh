#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Builds the libFuzzer targets in build-fuzz/ (hla's libraries instrumented
# for coverage, ASan and UBSan; clang-22 with libclang-rt-22-dev) and runs
# each for SECONDS: hla-fuzz-ir on a corpus seeded from the lit suite's
# .mlir files, hla-fuzz-npy on .npy files numpy writes.
#
#   scripts/fuzz.sh [SECONDS] [ir|npy|all]   (default 60 all; FUZZ_RUNS=N
#                                            for a count of inputs instead)
#
# A finding stops the run with libFuzzer's report and a crash-* file in
# build-fuzz/findings/, and the script exits non-zero. Needs the packages
# scripts/setup.sh installs (libclang-rt-22-dev among them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CCACHE_BASEDIR="$root"
seconds="${1:-60}"
which="${2:-all}"
build="$root/build-fuzz"
llvm="${LLVM_PREFIX:-/usr/lib/llvm-22}"

if ! dpkg-query -W -f='${Status}' libclang-rt-22-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "fuzz.sh: clang's sanitizer runtimes are missing: run scripts/setup.sh first" >&2
  exit 2
fi

if [ ! -f "$build/build.ninja" ]; then
  flags="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR="$llvm/lib/cmake/mlir" -DHLA_ENABLE_FUZZERS=ON \
    -DCMAKE_CXX_FLAGS="$flags" "${launcher[@]}"
fi
started=$(date +%s)
cmake --build "$build" --target hla-fuzz-ir hla-fuzz-npy -- -j"$(nproc)"
echo "== fuzz targets built in $(($(date +%s) - started)) s"
mkdir -p "$build/findings"
runs=()
[ -n "${FUZZ_RUNS:-}" ] && runs=(-runs="$FUZZ_RUNS")
# Timeouts and memory: an input that takes 20 s or 2 GB is a finding.
fuzz() {
  "$@" -max_total_time="$seconds" "${runs[@]}" -timeout=20 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/findings/"
}

if [ "$which" = all ] || [ "$which" = ir ]; then
  corpus="$build/corpus-ir"
  mkdir -p "$corpus"
  if [ -z "$(ls -A "$corpus")" ]; then
    # The seeds: every lit input, one file per -split-input-file case.
    find "$root/test" -name '*.mlir' | while read -r f; do
      base="$(echo "${f#"$root/"}" | tr '/' '_')"
      awk -v out="$corpus/$base" 'BEGIN { n = 0 } /^\/\/ -----/ { n++; next }
        { print > (out "." n) }' "$f"
    done
  fi
  echo "== hla-fuzz-ir"
  fuzz "$build/bin/hla-fuzz-ir" "$corpus" -max_len=16384
fi

if [ "$which" = all ] || [ "$which" = npy ]; then
  corpus="$build/corpus-npy"
  mkdir -p "$corpus"
  if [ -z "$(ls -A "$corpus")" ]; then
    "${PYTHON:-/usr/bin/python3}" - "$corpus" <<'PY'
import sys, numpy as np
from numpy.lib import format as fmt
out = sys.argv[1]
for name, a, version in [("f32", np.ones((2, 3, 4), np.float32), (1, 0)),
                         ("vec", np.arange(5, dtype=np.float32), (2, 0)),
                         ("f64", np.zeros((2, 3, 4)), (1, 0)),
                         ("big", np.ones((2, 3, 4), ">f4"), (3, 0))]:
    with open(f"{out}/{name}.npy", "wb") as f:
        fmt.write_array(f, a, version=version)
PY
  fi
  echo "== hla-fuzz-npy"
  # The reader's error messages go to stderr, one per input: closed.
  fuzz "$build/bin/hla-fuzz-npy" "$corpus" -max_len=4096 -close_fd_mask=2
fi
