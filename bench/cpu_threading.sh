#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Thread runtimes for the CPU path: the same model (ahla at 1x4096x8x64)
# compiled with OpenMP worksharing (what hla-cpu-pipeline uses) and with
# MLIR's async runtime (async-parallel-for), timed with --bench. The async
# variant is built by hand from the same passes, since the pipeline does not
# offer it: its runtime library links all of LLVM.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
llvm="${LLVM_PREFIX:-/usr/lib/llvm-22}"
opt="$root/build/bin/hla-opt"
work="$(mktemp -d)"
t="tensor<1x4096x8x64xf32>"
cat > "$work/m.mlir" <<EOM
func.func @main(%q: $t, %k: $t, %v: $t) -> $t {
  %o = hla.ahla %q, %k, %v : ($t, $t, $t) -> $t
  return %o : $t
}
EOM
"$opt" "$work/m.mlir" --emit=exe -o "$work/openmp"
front="--hla-expand --hla-chunk --hla-lower-scans --convert-hla-to-linalg \
  --convert-elementwise-to-linalg --canonicalize --cse --hla-vectorize-tiles \
  --canonicalize --hla-record-signatures"
"$opt" "$work/m.mlir" $front \
  "--one-shot-bufferize=bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops" \
  --buffer-results-to-out-params="modify-public-functions hoist-static-allocs" \
  --buffer-deallocation-pipeline --canonicalize --cse --canonicalize \
  --convert-vector-to-scf=full-unroll --canonicalize --convert-linalg-to-loops \
  --scf-forall-to-parallel --async-parallel-for="async-dispatch num-workers=$(nproc)" \
  --async-to-async-runtime --async-runtime-ref-counting --async-runtime-ref-counting-opt \
  --canonicalize --expand-strided-metadata --lower-affine --convert-scf-to-cf \
  --convert-async-to-llvm \
  --convert-vector-to-llvm="reassociate-fp-reductions vector-contract-lowering=outerproduct" \
  --finalize-memref-to-llvm --convert-math-to-llvm --convert-arith-to-llvm \
  --convert-index-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \
  --convert-ub-to-llvm --reconcile-unrealized-casts --hla-emit-entry-abi=entry=main \
  -o "$work/async.mlir"
"$llvm/bin/mlir-translate" --mlir-to-llvmir "$work/async.mlir" -o "$work/async.ll"
clang-22 -O3 -march=native -ffp-contract=fast -Wno-override-module "$work/async.ll" \
  "$root/build/lib/libhla_cpu_runtime.a" -L"$llvm/lib" -lmlir_async_runtime \
  -Wl,-rpath,"$llvm/lib" -lm -o "$work/async"
echo "openmp: $("$work/openmp" --random 1 --bench 20)"
echo "async:  $("$work/async" --random 1 --bench 20)"
echo "async runtime's dependencies: $(ldd "$work/async" | grep -o 'lib[A-Za-z_]*\.so[.0-9]*' | tr '\n' ' ')"
