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

/// Called by hla_runtime_call when an entry's body has run, inside the call
/// (a failure here fails it). The CPU runtime's (weak) definition does
/// nothing. The CUDA runtime queues a call's kernels without waiting for
/// them; on a stream the caller handed it (hla_cuda_set_stream) the call
/// returns once its work is queued, as a CUDA library call does, and here,
/// on hla's own stream, it waits for that work: a caller that gave no
/// stream gets its results in place and its kernels' faults as the call's
/// failure.
void hla_runtime_call_done(void);

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//
//
// An entry `hla_<f>` returns 0, or non-zero after a failed run-time check
// or driver call, with the message kept for hla_last_error. Generated code
// and the target runtimes report such failures by calling hla_abort, which
// never returns: it unwinds (longjmp) to the hla_runtime_call that runs the
// entry on this thread. It never unwinds out of an OpenMP parallel region
// or from a worker thread: there (a check inside a parallel loop, such as
// the fused chunk form's cu_seqlens checks) it prints the message and exits
// with status 2, as before. The CUDA runtime is called from the host thread
// only, outside OpenMP, and releases its locks before it reports. A failed
// call may leak the temporary buffers it had allocated; every later call
// starts afresh.

/// Runs `body(inputs, outputs)` (an entry's code) so that an hla_abort
/// inside it returns here: 0 when the body completed, 1 when it failed.
int hla_runtime_call(void (*body)(void *const *, void *const *),
                     void *const *inputs, void *const *outputs);

/// Ends the hla_runtime_call running on this thread with `message`. Outside
/// one (an executable's own set-up code) it prints "error: <message>" and
/// exits with status 2.
_Noreturn void hla_abort(const char *message);

/// The message of this thread's last hla_runtime_call when it failed, NULL
/// when it succeeded (or none ran). Exported by every artefact.
const char *hla_last_error(void);

#endif // HLA_RUNTIME_H
