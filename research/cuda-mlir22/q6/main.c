/* Q6 driver: fills A (64x16) and Bt (64x16) bf16, runs the MLIR-generated host code
 * (hla_run -> mgpu* -> driver API -> wgmma kernel), checks C = A * Bt^T on the CPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct { void *alloc, *aligned; int64_t off, sizes[2], strides[2]; } memref2d;
void _mlir_ciface_hla_run(memref2d *A, memref2d *Bt, memref2d *C);

static uint16_t f2bf(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); }
static float bf2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }

int main(void) {
  static uint16_t A[64 * 16], Bt[64 * 16];
  static float C[64 * 64];
  for (int i = 0; i < 64 * 16; ++i) {
    A[i] = f2bf((float)((i * 7) % 13 - 6) / 4.0f);
    Bt[i] = f2bf((float)((i * 5) % 11 - 5) / 2.0f);
  }
  memref2d a = {A, A, 0, {64, 16}, {16, 1}}, b = {Bt, Bt, 0, {64, 16}, {16, 1}};
  memref2d c = {C, C, 0, {64, 64}, {64, 1}};
  _mlir_ciface_hla_run(&a, &b, &c);
  double maxerr = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) {
      float ref = 0;
      for (int k = 0; k < 16; ++k) ref += bf2f(A[m * 16 + k]) * bf2f(Bt[n * 16 + k]);
      double e = fabs(ref - C[m * 64 + n]);
      if (e > maxerr) maxerr = e;
    }
  printf("C[0][0]=%g C[63][63]=%g max abs err=%g -> %s\n", C[0], C[4095], maxerr,
         maxerr < 1e-3 ? "PASS" : "FAIL");
  return maxerr < 1e-3 ? 0 : 1;
}
