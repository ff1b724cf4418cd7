/* Minimal CUDA *driver API* implementation of the mgpu* entry points that MLIR 22's
 * gpu-to-llvm emits (signatures taken from the `declare`s in the lowered LLVM IR).
 * Written for this experiment; no MLIR code or library involved. */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int g_device = 0;
static CUcontext g_ctx = NULL;

static void check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return;
  const char *name = NULL;
  cuGetErrorName(r, &name);
  fprintf(stderr, "hla-rt: %s failed: %s\n", what, name ? name : "?");
  abort();
}
#define CK(x) check((x), #x)

static void ensure_ctx(void) {
  if (!g_ctx) {
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, g_device));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  }
  CK(cuCtxSetCurrent(g_ctx));
}

void mgpuSetDefaultDevice(int32_t device) { g_device = device; }

/* cubin / fatbin image (size unused: the driver parses the ELF/fatbin header) */
void *mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  ensure_ctx();
  CUmodule m = NULL;
  CK(cuModuleLoadData(&m, data));
  return m;
}

/* NUL-terminated PTX text, JIT-compiled by the driver */
void *mgpuModuleLoadJIT(void *data, int optLevel) {
  ensure_ctx();
  char log[8192] = {0};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_OPTIMIZATION_LEVEL};
  void *vals[] = {log, (void *)(uintptr_t)sizeof(log), (void *)(uintptr_t)optLevel};
  CUmodule m = NULL;
  CUresult r = cuModuleLoadDataEx(&m, data, 3, opts, vals);
  if (r != CUDA_SUCCESS) fprintf(stderr, "hla-rt: PTX JIT log:\n%s\n", log);
  check(r, "cuModuleLoadDataEx");
  return m;
}

void mgpuModuleUnload(void *m) { CK(cuModuleUnload((CUmodule)m)); }

void *mgpuModuleGetFunction(void *m, const char *name) {
  CUfunction f = NULL;
  CK(cuModuleGetFunction(&f, (CUmodule)m, name));
  return f;
}

static void raise_smem_limit(CUfunction f, int32_t smem) {
  if (smem > 48 * 1024) /* opt-in above the 48 KiB default */
    CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
}

void mgpuLaunchKernel(void *f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                      intptr_t by, intptr_t bz, int32_t smem, void *stream,
                      void **params, void **extra, size_t nparams) {
  (void)nparams;
  ensure_ctx();
  raise_smem_limit((CUfunction)f, smem);
  CK(cuLaunchKernel((CUfunction)f, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx,
                    (unsigned)by, (unsigned)bz, (unsigned)smem, (CUstream)stream, params,
                    extra));
}

void mgpuLaunchClusterKernel(void *f, intptr_t cx, intptr_t cy, intptr_t cz, intptr_t gx,
                             intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                             int32_t smem, void *stream, void **params, void **extra) {
  ensure_ctx();
  raise_smem_limit((CUfunction)f, smem);
  CUlaunchAttribute attr;
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = (unsigned)cx;
  attr.value.clusterDim.y = (unsigned)cy;
  attr.value.clusterDim.z = (unsigned)cz;
  CUlaunchConfig cfg = {0};
  cfg.gridDimX = (unsigned)gx; cfg.gridDimY = (unsigned)gy; cfg.gridDimZ = (unsigned)gz;
  cfg.blockDimX = (unsigned)bx; cfg.blockDimY = (unsigned)by; cfg.blockDimZ = (unsigned)bz;
  cfg.sharedMemBytes = (unsigned)smem;
  cfg.hStream = (CUstream)stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CK(cuLaunchKernelEx(&cfg, (CUfunction)f, params, extra));
}

void *mgpuStreamCreate(void) {
  ensure_ctx();
  CUstream s = NULL;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  return s;
}
void mgpuStreamDestroy(void *s) { CK(cuStreamDestroy((CUstream)s)); }
void mgpuStreamSynchronize(void *s) { CK(cuStreamSynchronize((CUstream)s)); }
void mgpuStreamWaitEvent(void *s, void *e) { CK(cuStreamWaitEvent((CUstream)s, (CUevent)e, 0)); }

void *mgpuEventCreate(void) {
  ensure_ctx();
  CUevent e = NULL;
  CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  return e;
}
void mgpuEventDestroy(void *e) { CK(cuEventDestroy((CUevent)e)); }
void mgpuEventSynchronize(void *e) { CK(cuEventSynchronize((CUevent)e)); }
void mgpuEventRecord(void *e, void *s) { CK(cuEventRecord((CUevent)e, (CUstream)s)); }

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  (void)stream;
  ensure_ctx();
  CUdeviceptr p = 0;
  if (bytes == 0) return NULL;
  if (hostShared)
    CK(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL));
  else
    CK(cuMemAlloc(&p, bytes));
  return (void *)(uintptr_t)p;
}
void mgpuMemFree(void *p, void *stream) {
  (void)stream;
  if (p) CK(cuMemFree((CUdeviceptr)(uintptr_t)p));
}
/* unified addressing: cuMemcpyAsync infers the direction */
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  CK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes,
                   (CUstream)stream));
}
void mgpuMemset32(void *dst, uint32_t v, size_t count, void *stream) {
  CK(cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, v, count, (CUstream)stream));
}
void mgpuMemset16(void *dst, uint16_t v, size_t count, void *stream) {
  CK(cuMemsetD16Async((CUdeviceptr)(uintptr_t)dst, v, count, (CUstream)stream));
}

/* ---- TMA descriptors ------------------------------------------------------------
 * (a) ABI of MLIR 22's lowering of nvgpu.tma.create.descriptor:
 *     void *mgpuTensorMapEncodeTiledMemref(int64 rank, <ranked memref descriptor>*,
 *         int64 dtype, int64 interleave, int64 swizzle, int64 l2promo, int64 oobFill,
 *         int64 *boxDims /- outermost first, like the memref -/)
 *     returns a *device* pointer to a 128-byte CUtensorMap (kernel gets it as a plain pointer).
 * (b) hlaTensorMapEncode2D: fills a host CUtensorMap that the launcher passes *by value*
 *     (kernel param `.param .align 64 .b8 p[128]`, LLVM `byval([128 x i8]) align 64 "nvvm.grid_constant"`). */
static size_t tma_elem_bytes(CUtensorMapDataType t) {
  switch (t) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16: case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_UINT64: return 8;
  default: return 4;
  }
}

void *mgpuTensorMapEncodeTiledMemref(int64_t rank, void *desc, int64_t dtype, int64_t interleave,
                                     int64_t swizzle, int64_t l2promo, int64_t oob,
                                     int64_t *boxDims) {
  /* ranked memref descriptor: {T *alloc; T *aligned; int64 offset; int64 sizes[rank]; int64 strides[rank];} */
  char **ptrs = (char **)desc;
  int64_t *ints = (int64_t *)(ptrs + 2);
  int64_t offset = ints[0], *sizes = ints + 1, *strides = ints + 1 + rank;
  size_t eb = tma_elem_bytes((CUtensorMapDataType)dtype);
  cuuint64_t gdim[5], gstride[4];
  cuuint32_t box[5], estride[5];
  for (int64_t d = 0; d < rank; ++d) { /* CUtensorMap lists dimensions innermost first */
    gdim[d] = (cuuint64_t)sizes[rank - 1 - d];
    box[d] = (cuuint32_t)boxDims[rank - 1 - d];
    estride[d] = 1;
    if (d > 0) gstride[d - 1] = (cuuint64_t)strides[rank - 1 - d] * eb;
  }
  CUtensorMap map;
  ensure_ctx();
  CK(cuTensorMapEncodeTiled(&map, (CUtensorMapDataType)dtype, (cuuint32_t)rank,
                            ptrs[1] + offset * (int64_t)eb, gdim, gstride, box, estride,
                            (CUtensorMapInterleave)interleave, (CUtensorMapSwizzle)swizzle,
                            (CUtensorMapL2promotion)l2promo, (CUtensorMapFloatOOBfill)oob));
  CUdeviceptr d = 0;
  CK(cuMemAlloc(&d, sizeof map)); /* never freed: one per descriptor creation */
  CK(cuMemcpyHtoD(d, &map, sizeof map));
  return (void *)(uintptr_t)d;
}

void hlaTensorMapEncode2D(CUtensorMap *out, void *base, CUtensorMapDataType dtype,
                          uint64_t rows, uint64_t cols, uint64_t rowStrideBytes,
                          uint32_t boxRows, uint32_t boxCols, CUtensorMapSwizzle swizzle) {
  cuuint64_t gdim[2] = {cols, rows}, gstride[1] = {rowStrideBytes};
  cuuint32_t box[2] = {boxCols, boxRows}, estride[2] = {1, 1};
  ensure_ctx();
  CK(cuTensorMapEncodeTiled(out, dtype, 2, base, gdim, gstride, box, estride,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}
