//===- FuzzNpy.c - libFuzzer target: the executables' .npy reader -*- C -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each input is the bytes of a .npy file, read by the CPU runtime's
// loadInput (what an executable does with each argument) against two entry
// signatures: a float32 [2, 3, 4] tensor and a bfloat16 [5] vector (read
// from float32 files). A clear error or a loaded buffer is the expected
// answer; a crash, a sanitizer report or an allocation beyond what the
// file can hold is a finding.
//
// The reader's functions are static to the runtime, so the runtime's source
// is included here, its `main` renamed, with the entry symbols an artefact
// would define.
//
//===----------------------------------------------------------------------===//

#define main hla_cpu_runtime_main
#include "../../lib/Runtime/CPU/hla_cpu_runtime.c"
#undef main

#include <unistd.h>

int32_t hla_entry(void *const *inputs, void *const *outputs) {
  (void)inputs;
  (void)outputs;
  return 0;
}
const char hla_entry_signature[] = "main(f32[2,3,4])->(f32[2,3,4])";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) {
    snprintf(path, sizeof(path), "/tmp/hla-fuzz-npy-%d.npy", (int)getpid());
  }
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  if (size && fwrite(data, 1, size, f) != size) {
    fclose(f);
    return 0;
  }
  fclose(f);
  HlaTensorInfo tensors[2] = {{HLA_F32, 3, {2, 3, 4}}, {HLA_BF16, 1, {5}}};
  for (int i = 0; i < 2; ++i) {
    void *buffer = NULL;
    if (loadInput(path, &tensors[i], 0, &buffer) == 0)
      free(buffer);
  }
  return 0;
}
