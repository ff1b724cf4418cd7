#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Builds hla with AddressSanitizer and UndefinedBehaviorSanitizer in
# build-asan/ (HLA_SANITIZE=address,undefined: hla-opt, libHLACAPI.so, the
# runtimes, and every artefact they link, all against clang's shared
# sanitizer runtime) and runs the test suites under it.
#
#   scripts/sanitize.sh [lit|pytest|all] [PYTEST ARGS...]   (default: all;
#                        pytest arguments, e.g. test files, replace `tests`)
#
# lit runs the sanitized hla-opt and the executables it links; pytest runs
# the Python package on the sanitized libHLACAPI.so in a Python that
# preloads the sanitizer runtime (the interpreter itself is not
# instrumented). The GPU tests skip here as in the plain suite. A report
# fails the run (-fno-sanitize-recover). Needs what scripts/setup.sh
# installs (clang-22, libclang-rt-22-dev).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CCACHE_BASEDIR="$root"
which="${1:-all}"
shift || true
build="$root/build-asan"
llvm="${LLVM_PREFIX:-/usr/lib/llvm-22}"
python="${PYTHON:-/usr/bin/python3}"

if ! dpkg-query -W -f='${Status}' libclang-rt-22-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "sanitize.sh: clang's sanitizer runtimes are missing: run scripts/setup.sh first" >&2
  exit 2
fi

if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # Line tables only: symbolized reports without a full debug build.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_FLAGS=-gline-tables-only -DCMAKE_CXX_FLAGS=-gline-tables-only \
    -DMLIR_DIR="$llvm/lib/cmake/mlir" -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
    -DHLA_PYTHON_EXECUTABLE="$python" -DHLA_SANITIZE=address,undefined \
    "${launcher[@]}"
fi
echo "== building $build"
started=$(date +%s)
cmake --build "$build" -- -j"$(nproc)"
echo "== built in $(($(date +%s) - started)) s"

sanitizer_runtime="$(clang-22 --print-file-name=libclang_rt.asan-x86_64.so)"
if [ ! -f "$sanitizer_runtime" ]; then
  echo "sanitize.sh: $sanitizer_runtime not found" >&2
  exit 2
fi
# Tools and artefacts find the shared runtime by their rpath; reports go to
# stderr with stacks. Container-overflow checks need every std::vector user
# instrumented, and Debian's libMLIR.so is not: off. Leak checking stays on
# for the tools (it is off for Python, whose interpreter keeps its objects
# to the end).
export HLA_SANITIZER_RUNTIME="$sanitizer_runtime"  # test/lit.cfg.py's %PYTHON
# Manual poisoning is off for the same reason: LLVM's BumpPtrAllocator,
# inlined into hla's instrumented code, poisons the slabs it starts, and
# libMLIR's uninstrumented copy hands out memory from them without
# unpoisoning it (a false use-after-poison in the MLIR parser, seen once in
# the pytest run).
export ASAN_OPTIONS="detect_container_overflow=0:allow_user_poisoning=0:abort_on_error=0:halt_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

status=0
if [ "$which" = all ] || [ "$which" = lit ]; then
  echo "== lit under ASan+UBSan"
  "$llvm/bin/lit" -sv "$build/test" || status=1
fi
if [ "$which" = all ] || [ "$which" = pytest ]; then
  echo "== pytest under ASan+UBSan"
  cache="$(mktemp -d)"
  trap 'rm -rf "$cache"' EXIT
  (cd "$root/python" &&
    LD_PRELOAD="$HLA_SANITIZER_RUNTIME" ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
    HLA_LIBRARY_DIR="$build/lib" HLA_OPT="$build/bin/hla-opt" HLA_CACHE_DIR="$cache" \
    "$python" -m pytest -q -p no:cacheprovider "${@:-tests}") || status=1
fi
exit $status
