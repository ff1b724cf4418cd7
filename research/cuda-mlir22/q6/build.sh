#!/bin/sh
# Q6: build a host executable from MLIR (kernel + host code) that depends only on libcuda.
set -ex
L=/usr/lib/llvm-22/bin
cd "$(dirname "$0")"
python3 make_app_mlir.py                                   # app.mlir = q2/wgmma_nvvm.mlir kernel + host func
$L/mlir-opt app.mlir --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=fatbin" -o app.lowered.mlir
$L/mlir-translate --mlir-to-llvmir app.lowered.mlir -o app_host.ll
$L/llc -O2 -filetype=obj -relocation-model=pic app_host.ll -o app_host.o
$L/clang -O2 -Wall -c -I/usr/local/cuda/include hla_cuda_rt.c -o hla_cuda_rt.o
$L/clang -O2 -Wall -c main.c -o main.o
$L/clang main.o app_host.o hla_cuda_rt.o -L/usr/local/cuda/lib/stubs -lcuda -lm -o app
ldd app || true
