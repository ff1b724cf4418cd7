#!/bin/bash
# Reproduces every experiment of REPORT.md; writes logs/*.log. Needs no GPU.
set -u
R=/tmp/cuda-research; M=/usr/lib/llvm-22/bin; PTXAS=/usr/local/cuda/bin/ptxas
X=$R/extract_gpu_binary.py; U=$R/unwrap_gpu_module.py
mkdir -p $R/logs
run() { echo "\$ $*"; "$@" 2>&1; echo "[rc=$?]"; }

# ---------- Q1: gpu.module -> PTX ----------
{ cd $R/q1
P='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,cse),reconcile-unrealized-casts,gpu-module-to-binary{format=FMT})'
for f in isa bin fatbin llvm offload; do run $M/mlir-opt saxpy.mlir --pass-pipeline="${P/FMT/$f}" -o saxpy.$f.mlir | head -3; done
run $X saxpy.isa.mlir saxpy.ptx; run $PTXAS -arch=sm_90a -v saxpy.ptx -o saxpy.cubin
run $M/mlir-opt saxpy_aligned.mlir --pass-pipeline="${P/FMT/isa}" -o saxpy_aligned.isa.mlir
run $X saxpy_aligned.isa.mlir saxpy_aligned.ptx; grep -E "ld.global|st.global" saxpy_aligned.ptx
# path B: lowered gpu.module body -> mlir-translate -> llc
run $M/mlir-opt saxpy.mlir --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,cse),reconcile-unrealized-casts)' -o saxpy.nvvm.mlir
run $M/mlir-translate --mlir-to-llvmir saxpy.nvvm.mlir -o saxpy.dropped.ll; echo "defines in saxpy.dropped.ll: $(grep -c '^define' saxpy.dropped.ll)"
run $U saxpy.nvvm.mlir saxpy.unwrapped.mlir; run $M/mlir-translate --mlir-to-llvmir saxpy.unwrapped.mlir -o saxpy.ll
run $M/llc -mtriple=nvptx64-nvidia-cuda -mcpu=sm_90a -mattr=+ptx80 -O3 saxpy.ll -o saxpy.llc.ptx
run $PTXAS -arch=sm_90a -v saxpy.llc.ptx -o saxpy.llc.cubin
run $X saxpy.llvm.mlir saxpy.from_format_llvm.bc
run $M/llc -mcpu=sm_90a -mattr=+ptx80 -O3 saxpy.from_format_llvm.bc -o saxpy.from_format_llvm.ptx
run $PTXAS -arch=sm_90a saxpy.from_format_llvm.ptx -o /dev/null
echo "# toolkit discovery"; run env -i PATH=/usr/bin:/bin $M/mlir-opt saxpy.mlir --pass-pipeline="${P/FMT/bin}" -o /dev/null 2>&1 | grep -m1 error
for v in CUDA_ROOT CUDA_HOME CUDA_PATH; do env -i PATH=/usr/bin:/bin $v=/usr/local/cuda $M/mlir-opt saxpy.mlir --pass-pipeline="${P/FMT/fatbin}" -o /dev/null >/dev/null 2>&1; echo "$v only: rc=$?"; done
echo "# libdevice"; PM='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
run $M/mlir-opt mathexp.mlir --pass-pipeline="$PM" -o mathexp.isa.mlir; $X mathexp.isa.mlir mathexp.ptx; run $PTXAS -arch=sm_90a mathexp.ptx -o /dev/null
env -i PATH=/usr/bin:/bin $M/mlir-opt mathexp.mlir --pass-pipeline="$PM" -o mathexp.noenv.isa.mlir; $X mathexp.noenv.isa.mlir mathexp.noenv.ptx; run $PTXAS -arch=sm_90a mathexp.noenv.ptx -o /dev/null
} > $R/logs/q1.log 2>&1

# ---------- Q2: wgmma ----------
{ cd $R/q2; P=$(cat pipeline_q2.txt); echo "pipeline: $P"
python3 gen_wgmma_nvvm.py 64; python3 gen_wgmma_nvvm.py 256
for f in wgmma_nvgpu wgmma_nvgpu_extsmem wgmma_nvgpu_loop wgmma_nvvm wgmma_nvvm_n256; do
  echo "=== $f"; run $M/mlir-opt $f.mlir --pass-pipeline="$P" -o $f.isa.mlir; $X $f.isa.mlir $f.ptx
  grep -E "^\s*\.(extern )?\.?shared|^\.extern|wgmma\.mma_async\.[a-z0-9.]*|wgmma.wait_group" -o $f.ptx | sort | uniq -c
  run $PTXAS -arch=sm_90a -v $f.ptx -o $f.cubin
done
echo "=== smem placement check (llc output of wgmma_nvgpu)"; for f in wgmma_nvgpu.llc.ptx swapped.ptx extern.ptx; do echo "-- $f"; $PTXAS -arch=sm_90a -v $f -o /dev/null 2>&1 | grep smem; done
run $M/llc -mcpu=sm_90a -mattr=+ptx80 ext_smem.ll -o ext_smem.ptx; grep shared ext_smem.ptx
} > $R/logs/q2.log 2>&1

# ---------- Q3: TMA descriptor as __grid_constant__ ----------
{ cd $R/q3; P='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-nvvm-to-llvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
for f in tma_grid_constant tma_byval_no_gc; do echo "=== $f"; run $M/mlir-opt $f.mlir --pass-pipeline="$P" -o $f.isa.mlir; $X $f.isa.mlir $f.ptx
  grep -E "param_0|__local_depot|cvta.param|cp.async.bulk.tensor" $f.ptx; run $PTXAS -arch=sm_90a -v $f.ptx -o $f.cubin; done
grep define tma_grid_constant.ll
} > $R/logs/q3.log 2>&1

# ---------- Q4: mma.sync bf16 ----------
{ cd $R/q4
run $M/mlir-opt nvgpu_mma_bf16.mlir --pass-pipeline='builtin.module(convert-nvgpu-to-nvvm,nvvm-attach-target{chip=sm_80 O=3},gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})' -o /dev/null | head -3
for a in sm_80 sm_90a; do echo "=== $a"; run $M/mlir-opt nvvm_mma_bf16.mlir --pass-pipeline="builtin.module(nvvm-attach-target{chip=$a O=3},gpu.module(convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})" -o nvvm_mma_bf16.$a.isa.mlir
  $X nvvm_mma_bf16.$a.isa.mlir nvvm_mma_bf16.$a.ptx; grep -E "^\.version|^\.target|mma.sync" nvvm_mma_bf16.$a.ptx; run $PTXAS -arch=$a -v nvvm_mma_bf16.$a.ptx -o nvvm_mma_bf16.$a.cubin; done
} > $R/logs/q4.log 2>&1

# ---------- Q5: host runtime calls ----------
{ cd $R/q5
for fmt in isa bin fatbin; do echo "=== host_launch cubin-format=$fmt"
  run $M/mlir-opt host_launch.mlir --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=$fmt" -o host_launch.$fmt.lowered.mlir
  $M/mlir-translate --mlir-to-llvmir host_launch.$fmt.lowered.mlir -o host_launch.$fmt.ll; grep -E "^declare|call .*mgpu|global_ctors" host_launch.$fmt.ll | cut -c1-220; done
echo "=== host_more"; run $M/mlir-opt host_more.mlir --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 cubin-format=fatbin" -o host_more.lowered.mlir
$M/mlir-translate --mlir-to-llvmir host_more.lowered.mlir -o host_more.ll; grep -E "^declare|call .*mgpu" host_more.ll | cut -c1-220
} > $R/logs/q5.log 2>&1

# ---------- Q6: executable linked against libcuda only ----------
{ run $R/q6/build.sh; cd $R/q6; run ./app; llvm_readelf=$M/llvm-readelf; $llvm_readelf -d app | grep NEEDED; nm -u app_host.o; } > $R/logs/q6.log 2>&1
echo done
