//===- hla_runtime.h - Shared declarations of hla's runtimes ------*- C -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the executables' main (hla_cpu_runtime.c) and the target runtimes
// (hla_cuda_runtime.c) share: the parsed form of an entry signature and the
// hooks through which a target runtime moves the entry's buffers to its
// device. Plain C.
//
//===----------------------------------------------------------------------===//

#ifndef HLA_RUNTIME_H
#define HLA_RUNTIME_H

#include <stdint.h>

enum { HLA_F32, HLA_F16, HLA_BF16, HLA_F64, HLA_I32, HLA_I64 };

typedef struct {
  int dtype;
  int rank;
  int64_t shape[16];
} HlaTensorInfo;

typedef struct {
  char name[128];
  int numInputs, numOutputs;
  HlaTensorInfo inputs[64], outputs[64];
} HlaSignature;

/// Bytes of one element of `dtype`.
int64_t hla_dtype_size(int dtype);
/// Elements of a tensor.
int64_t hla_num_elements(const HlaTensorInfo *t);

/// Called by an executable's main once, before it runs the entry: fills
/// `entryInputs` / `entryOutputs` with the buffers the entry function takes
/// for the host buffers `hostInputs` / `hostOutputs`. The CPU runtime's
/// (weak) definition passes the host buffers through; the CUDA runtime's
/// copies the inputs to device memory.
void hla_runtime_prepare(const HlaSignature *sig, void **hostInputs,
                         void **hostOutputs, void **entryInputs,
                         void **entryOutputs);
/// Called once after the runs: brings the outputs back to `hostOutputs`.
void hla_runtime_finish(const HlaSignature *sig, void **entryOutputs,
                        void **hostOutputs);

/// Prints "error: <message>" and exits with status 2.
void hla_abort(const char *message);

#endif // HLA_RUNTIME_H
