#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Shared set-up for the README's commands, safe to run again: installs the
# Debian packages that are missing (and only those), configures build/ once,
# and brings the build up to date.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Paths under the checkout are hashed relative to it: a second clone (CI's)
# reuses the compiler cache of the first.
export CCACHE_BASEDIR="$root"
# Where LLVM/MLIR 22 and the tests' Python live (Debian's by default).
llvm="${LLVM_PREFIX:-/usr/lib/llvm-22}"
python="${PYTHON:-/usr/bin/python3}"

packages=(
  cmake ninja-build ccache git
  clang-22 llvm-22-dev libmlir-22-dev mlir-22-tools libomp-22-dev
  libclang-rt-22-dev clang-format-22
  python3-numpy python3-pytest python3-pytest-xdist python3-torch
  python3-pip python3-setuptools python3-wheel
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
else
  echo "== all packages present"
fi

build="$root/build"
if [ ! -f "$build/build.ninja" ]; then
  echo "== configuring $build"
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR="$llvm/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
    -DHLA_PYTHON_EXECUTABLE="$python" \
    -DHLA_REQUIRE_CUDA="${HLA_REQUIRE_CUDA:-${CI:+ON}}" \
    "${launcher[@]}"
fi
echo "== building"
cmake --build "$build" -- -j"$(nproc)"
