// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: hla-opt %s --hla-target=cuda --cuda-schedule=persistent --emit=ptx -o %t/k.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/k.ptx
// RUN: %cuda_toolkit/bin/ptxas -arch=sm_90a %t/k.ptx -o %t/k.o
// RUN: hla-opt %s --hla-target=cuda --cuda-schedule=persistent --emit=cubin -o %t/k.cubin
// RUN: FileCheck %s --check-prefix=LOG < %t/k.cubin.ptxas.log
// RUN: llvm-readelf -h %t/k.cubin | FileCheck %s --check-prefix=CUBIN
// RUN: hla-opt %s --hla-target=cuda --emit=shared -o %t/k.so
// RUN: llvm-nm -D --defined-only %t/k.so | FileCheck %s --check-prefix=SYMBOLS
// RUN: llvm-readelf -d %t/k.so | FileCheck %s --check-prefix=NEEDED
// RUN: env HLA_CUDA_DRIVER=%t/no-such-driver.so %PYTHON -c "import ctypes; ctypes.CDLL('%t/k.so'); print('loaded')" | FileCheck %s --check-prefix=LOADS
// RUN: hla-opt %s --hla-target=cuda --emit=exe -o %t/k.exe
// RUN: llvm-readelf -d %t/k.exe | FileCheck %s --check-prefix=NEEDED
// RUN: env HLA_CUDA_DRIVER=%t/no-such-driver.so not %t/k.exe --random 1 2>&1 | FileCheck %s --check-prefix=NODRIVER

// Tests the CUDA artefacts of hla-opt for a bf16 hla2: the PTX (sm_90a,
// tensor cores, extern dynamic shared memory) that ptxas accepts; a cubin
// with ptxas's log kept beside it, free of spills; a shared library that
// exports the C ABI and the runtime's stream hook; executables and shared
// libraries that need neither libMLIR nor libcuda at load time: a library
// loads without a driver (kernel modules are loaded at the first launch),
// and running without one is a clear error.

// PTX: .version 8.0
// PTX: .target sm_90a
// PTX: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// PTX: .visible .entry main_kernel(
// PTX: .maxntid 256, 1, 1
// PTX: .minnctapersm 1
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: bar.sync

// LOG: // kernel module main_kernel
// LOG: Compiling entry function 'main_kernel' for 'sm_90a'
// LOG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// CUBIN: Class: ELF64
// CUBIN: Machine: {{.*}}CUDA

// SYMBOLS-DAG: T hla_cuda_set_stream
// SYMBOLS-DAG: T hla_main
// SYMBOLS-DAG: R hla_main_signature
// SYMBOLS-DAG: T mgpuLaunchKernel

// NEEDED-NOT: libMLIR
// NEEDED-NOT: libcuda
// NEEDED: libc.so

// LOADS: loaded

// NODRIVER: error: CUDA: initialisation: cannot load {{.*}}no-such-driver.so (is an NVIDIA driver installed?)
func.func @main(%q: tensor<1x100x2x32xbf16>, %k: tensor<1x100x2x32xbf16>, %v: tensor<1x100x2x32xbf16>) -> tensor<1x100x2x32xbf16> {
  %o = hla.hla2 %q, %k, %v {scale = 1.0 : f64} : (tensor<1x100x2x32xbf16>, tensor<1x100x2x32xbf16>, tensor<1x100x2x32xbf16>) -> tensor<1x100x2x32xbf16>
  return %o : tensor<1x100x2x32xbf16>
}
