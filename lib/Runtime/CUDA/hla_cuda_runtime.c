//===- hla_cuda_runtime.c - Runtime of hla's CUDA artefacts -------*- C -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Linked into every artefact `hla-opt --hla-target=cuda` produces. It
// implements, over the CUDA driver API, the `mgpu*` functions that MLIR's
// gpu-to-llvm host code calls (module loading, kernel launches, streams,
// events, memory), with the signatures MLIR 22.1 emits, plus what hla adds:
// the stream its launches use (hla_cuda_set_stream) and the hooks through
// which an executable's main moves its inputs to the device.
//
// libcuda is opened with dlopen on first use (or the library that
// $HLA_CUDA_DRIVER names), so that an artefact loads on a machine without a
// driver and says so when it is called. Plain C: an
// artefact depends on libc, libdl and the driver only. A failed driver call
// fails the entry call that made it: fail() hands "CUDA: ..." to hla_abort,
// which unwinds to the entry, and the entry returns non-zero
// (hla_runtime.h). So nothing here may fail while it holds a lock: the
// functions below release theirs before they call check() or fail().
//
//===----------------------------------------------------------------------===//

#define _GNU_SOURCE

#include "../hla_runtime.h"

#include <cublas_api.h>
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//===----------------------------------------------------------------------===//
// The driver, opened at run time
//===----------------------------------------------------------------------===//

// The driver entry points this runtime uses, as pointers filled by dlsym.
// Versioned names (cuMemAlloc is cuMemAlloc_v2 in cuda.h) are looked up by
// the name the header maps them to.
#define HLA_CUDA_FUNCTIONS(X)                                                  \
  X(cuInit, (unsigned int))                                                    \
  X(cuGetErrorName, (CUresult, const char **))                                 \
  X(cuGetErrorString, (CUresult, const char **))                               \
  X(cuDeviceGet, (CUdevice *, int))                                            \
  X(cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))               \
  X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                         \
  X(cuCtxSetCurrent, (CUcontext))                                              \
  X(cuModuleLoadData, (CUmodule *, const void *))                              \
  X(cuModuleLoadDataEx,                                                        \
    (CUmodule *, const void *, unsigned int, CUjit_option *, void **))         \
  X(cuModuleUnload, (CUmodule))                                                \
  X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))               \
  X(cuFuncSetAttribute, (CUfunction, CUfunction_attribute, int))               \
  X(cuLaunchKernel,                                                            \
    (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,       \
     unsigned int, unsigned int, unsigned int, CUstream, void **, void **))    \
  X(cuLaunchKernelEx, (const CUlaunchConfig *, CUfunction, void **, void **))  \
  X(cuStreamCreate, (CUstream *, unsigned int))                                \
  X(cuStreamDestroy, (CUstream))                                               \
  X(cuStreamSynchronize, (CUstream))                                           \
  X(cuStreamWaitEvent, (CUstream, CUevent, unsigned int))                      \
  X(cuStreamGetId, (CUstream, unsigned long long *))                           \
  X(cuEventCreate, (CUevent *, unsigned int))                                  \
  X(cuEventDestroy, (CUevent))                                                 \
  X(cuEventRecord, (CUevent, CUstream))                                        \
  X(cuEventSynchronize, (CUevent))                                             \
  X(cuMemAlloc, (CUdeviceptr *, size_t))                                       \
  X(cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned int))                  \
  X(cuMemFree, (CUdeviceptr))                                                  \
  X(cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))                        \
  X(cuMemFreeAsync, (CUdeviceptr, CUstream))                                   \
  X(cuDeviceGetDefaultMemPool, (CUmemoryPool *, CUdevice))                     \
  X(cuMemPoolSetAttribute, (CUmemoryPool, CUmemPool_attribute, void *))        \
  X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))               \
  X(cuMemcpyHtoD, (CUdeviceptr, const void *, size_t))                         \
  X(cuMemcpyHtoDAsync, (CUdeviceptr, const void *, size_t, CUstream))          \
  X(cuMemcpyDtoH, (void *, CUdeviceptr, size_t))                               \
  X(cuMemsetD32Async, (CUdeviceptr, unsigned int, size_t, CUstream))           \
  X(cuMemsetD16Async, (CUdeviceptr, unsigned short, size_t, CUstream))         \
  X(cuCtxSynchronize, (void))                                                  \
  X(cuTensorMapEncodeTiled,                                                    \
    (CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,                   \
     const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,               \
     const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,            \
     CUtensorMapL2promotion, CUtensorMapFloatOOBfill))

#define HLA_DECLARE_POINTER(name, params) static CUresult(*p_##name) params;
HLA_CUDA_FUNCTIONS(HLA_DECLARE_POINTER)
#undef HLA_DECLARE_POINTER

static pthread_once_t driverOnce = PTHREAD_ONCE_INIT;
static const char *driverError = NULL;
static int defaultDevice = 0;
static CUcontext context = NULL;
static CUdevice device = 0;

_Noreturn static void fail(const char *what, const char *detail) {
  char message[512];
  snprintf(message, sizeof(message), "CUDA: %s: %s", what, detail);
  hla_abort(message);
}

// The stringified macro name is the symbol: cuda.h maps cuMemAlloc to
// cuMemAlloc_v2 and so on, so expanding the name first gives the versioned
// symbol the driver exports.
#define HLA_STRINGIFY_EXPANDED(x) HLA_STRINGIFY(x)
#define HLA_STRINGIFY(x) #x

static char driverErrorText[512];

static void openDriver(void) {
  // $HLA_CUDA_DRIVER names another driver library (a specific install).
  const char *path = getenv("HLA_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  void *library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    snprintf(driverErrorText, sizeof(driverErrorText),
             "cannot load %s (is an NVIDIA driver installed?)", path);
    driverError = driverErrorText;
    return;
  }
#define HLA_LOOKUP(name, params)                                               \
  p_##name = (CUresult(*) params)dlsym(library, HLA_STRINGIFY_EXPANDED(name)); \
  if (!p_##name) {                                                             \
    driverError = "libcuda.so.1 lacks " HLA_STRINGIFY_EXPANDED(name);          \
    return;                                                                    \
  }
  HLA_CUDA_FUNCTIONS(HLA_LOOKUP)
#undef HLA_LOOKUP
  CUresult status = p_cuInit(0);
  if (status != CUDA_SUCCESS) {
    driverError = "cuInit failed (no usable GPU?)";
    return;
  }
  if (p_cuDeviceGet(&device, defaultDevice) != CUDA_SUCCESS ||
      p_cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS) {
    driverError = "cannot open the primary context of the GPU";
    return;
  }
  // Buffers between kernels come from the device's stream-ordered pool
  // (mgpuMemAlloc). By default the pool gives freed memory back to the
  // system at every synchronisation, so a call may map its buffers again;
  // the pool keeps what it has instead (a speed-up only, not measurable on
  // its own on an H200 next to the buffer reuse below; a driver that
  // refuses leaves the default).
  CUmemoryPool pool = NULL;
  if (p_cuDeviceGetDefaultMemPool(&pool, device) == CUDA_SUCCESS) {
    cuuint64_t keepAll = ~(cuuint64_t)0;
    (void)p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                  &keepAll);
  }
}

static void check(CUresult status, const char *what) {
  if (status == CUDA_SUCCESS)
    return;
  if (!p_cuGetErrorName || !p_cuGetErrorString) {
    char detail[64];
    snprintf(detail, sizeof(detail), "CUresult %d", (int)status);
    fail(what, detail);
  }
  const char *name = "?", *text = "?";
  p_cuGetErrorName(status, &name);
  p_cuGetErrorString(status, &text);
  char detail[384];
  snprintf(detail, sizeof(detail), "%s (%s)", name, text);
  fail(what, detail);
}

/// check() after releasing `held`, which the caller holds.
static void checkReleasing(CUresult status, const char *what,
                           pthread_mutex_t *held) {
  if (status == CUDA_SUCCESS)
    return;
  pthread_mutex_unlock(held);
  check(status, what);
}

//===----------------------------------------------------------------------===//
// $HLA_CUDA_TRACE=1: each launch, synchronisation, allocation and free on
// stderr with the host microseconds it took (where a call's time goes
// outside its kernels).
//===----------------------------------------------------------------------===//

static int traceState = -1; // unknown, off, on

static bool tracing(void) {
  if (traceState < 0) {
    const char *value = getenv("HLA_CUDA_TRACE");
    traceState = value && *value && strcmp(value, "0") != 0;
  }
  return traceState;
}

static double microseconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e6 + (double)now.tv_nsec / 1e3;
}

static void trace(const char *what, double since, size_t detail) {
  fprintf(stderr, "hla-cuda: %-12s %9.1f us  (%zu)\n", what,
          microseconds() - since, detail);
}

/// Opens the driver once and makes the context current in this thread.
static void enter(void) {
  pthread_once(&driverOnce, openDriver);
  if (driverError)
    fail("initialisation", driverError);
  check(p_cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

//===----------------------------------------------------------------------===//
// The stream hla's launches use
//===----------------------------------------------------------------------===//

// MLIR's synchronous launches create a stream, launch, synchronise and
// destroy it. hla hands out one stream instead: the caller's (e.g. the
// current PyTorch stream) or one of its own, created once.
static CUstream userStream = NULL;
static int haveUserStream = 0;
static CUstream ownStream = NULL;
static pthread_mutex_t streamLock = PTHREAD_MUTEX_INITIALIZER;

/// Makes hla's generated code launch on `stream` (a CUstream, 0 for the
/// legacy default stream); NULL-with-reset goes back to hla's own stream.
void hla_cuda_set_stream(void *stream, int use) {
  pthread_mutex_lock(&streamLock);
  userStream = (CUstream)stream;
  haveUserStream = use;
  pthread_mutex_unlock(&streamLock);
}

static CUstream currentStream(void) {
  pthread_mutex_lock(&streamLock);
  CUstream s;
  if (haveUserStream) {
    // The legacy default stream by its explicit handle: the generated host
    // code passes a null stream only for synchronous allocations, so a
    // null here sent every buffer of a torch default-stream call through
    // cuMemAlloc/cuMemFree (0.14 + 0.3 ms per 256 MiB on an H200) instead
    // of the pool and the kept buffers.
    s = userStream ? userStream : CU_STREAM_LEGACY;
  } else {
    if (!ownStream)
      checkReleasing(p_cuStreamCreate(&ownStream, CU_STREAM_NON_BLOCKING),
                     "cuStreamCreate", &streamLock);
    s = ownStream;
  }
  pthread_mutex_unlock(&streamLock);
  return s;
}

// A call on hla's own stream waits for its work (hla_runtime.h).
__attribute__((visibility("hidden"))) void hla_runtime_call_done(void) {
  pthread_mutex_lock(&streamLock);
  CUstream own = haveUserStream ? NULL : ownStream;
  pthread_mutex_unlock(&streamLock);
  if (own)
    check(p_cuStreamSynchronize(own), "kernel execution");
}

//===----------------------------------------------------------------------===//
// mgpu*: what gpu-to-llvm's host code calls (MLIR 22.1 signatures)
//===----------------------------------------------------------------------===//

void mgpuSetDefaultDevice(int32_t ordinal) { defaultDevice = ordinal; }

// gpu-to-llvm's host code loads its kernel modules from a constructor, when
// the artefact is loaded. The driver is touched only at the first launch, so
// that a program can load an artefact, and fail cleanly, without a GPU.
typedef struct {
  const void *image;
  int isPtx, optLevel;
  CUmodule module;
} LazyModule;

static pthread_mutex_t moduleLock = PTHREAD_MUTEX_INITIALIZER;

void *mgpuModuleLoad(void *data, size_t size) {
  (void)size; // cubin and fatbin images carry their own size
  LazyModule *lazy = (LazyModule *)calloc(1, sizeof(LazyModule));
  lazy->image = data;
  return lazy;
}

void *mgpuModuleLoadJIT(void *ptx, int optLevel) {
  LazyModule *lazy = (LazyModule *)calloc(1, sizeof(LazyModule));
  lazy->image = ptx;
  lazy->isPtx = 1;
  lazy->optLevel = optLevel;
  return lazy;
}

static CUmodule moduleOf(LazyModule *lazy) {
  enter();
  pthread_mutex_lock(&moduleLock);
  if (!lazy->module) {
    if (lazy->isPtx) {
      CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
      void *values[] = {(void *)(intptr_t)lazy->optLevel};
      checkReleasing(
          p_cuModuleLoadDataEx(&lazy->module, lazy->image, 1, options, values),
          "cuModuleLoadDataEx (PTX JIT)", &moduleLock);
    } else {
      checkReleasing(p_cuModuleLoadData(&lazy->module, lazy->image),
                     "cuModuleLoadData", &moduleLock);
    }
  }
  CUmodule module = lazy->module;
  pthread_mutex_unlock(&moduleLock);
  return module;
}

void mgpuModuleUnload(void *handle) {
  LazyModule *lazy = (LazyModule *)handle;
  // Runs from a destructor at exit, possibly after the driver is gone.
  if (lazy->module && context && !driverError)
    p_cuModuleUnload(lazy->module);
  free(lazy);
}

// gpu-to-llvm looks the kernel up at every launch; a small cache keeps that
// off the driver.
enum { kFunctionCacheSize = 64 };
static struct {
  void *module;
  char name[128];
  CUfunction function;
  int sharedBytes; // the dynamic shared memory the function may use
} functionCache[kFunctionCacheSize];
static int functionCacheUsed = 0;
static pthread_mutex_t functionLock = PTHREAD_MUTEX_INITIALIZER;

void *mgpuModuleGetFunction(void *module, const char *name) {
  enter();
  pthread_mutex_lock(&functionLock);
  for (int i = 0; i < functionCacheUsed; ++i)
    if (functionCache[i].module == module &&
        !strcmp(functionCache[i].name, name)) {
      CUfunction f = functionCache[i].function;
      pthread_mutex_unlock(&functionLock);
      return f;
    }
  pthread_mutex_unlock(&functionLock);
  // Outside the lock: loading the module and the lookup may fail.
  CUfunction function = NULL;
  check(p_cuModuleGetFunction(&function, moduleOf((LazyModule *)module), name),
        "cuModuleGetFunction");
  pthread_mutex_lock(&functionLock);
  if (functionCacheUsed < kFunctionCacheSize &&
      strlen(name) < sizeof(functionCache[0].name)) {
    functionCache[functionCacheUsed].module = module;
    strcpy(functionCache[functionCacheUsed].name, name);
    functionCache[functionCacheUsed].function = function;
    functionCache[functionCacheUsed].sharedBytes = 48 * 1024;
    ++functionCacheUsed;
  }
  pthread_mutex_unlock(&functionLock);
  return function;
}

/// Kernels may use more than 48 KiB of dynamic shared memory only after
/// they opt in.
static void allowSharedMemory(CUfunction function, int bytes) {
  if (bytes <= 48 * 1024)
    return;
  pthread_mutex_lock(&functionLock);
  int known = 0;
  for (int i = 0; i < functionCacheUsed; ++i)
    if (functionCache[i].function == function)
      known = functionCache[i].sharedBytes >= bytes;
  pthread_mutex_unlock(&functionLock);
  if (known)
    return;
  int optIn = 0;
  check(p_cuDeviceGetAttribute(
            &optIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            device),
        "cuDeviceGetAttribute");
  if (bytes > optIn) {
    char detail[160];
    snprintf(detail, sizeof(detail),
             "a kernel needs %d bytes of shared memory, the GPU allows %d",
             bytes, optIn);
    fail("launch", detail);
  }
  check(p_cuFuncSetAttribute(
            function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        "cuFuncSetAttribute");
  // Recorded once the opt-in succeeded, so that a failure repeats.
  pthread_mutex_lock(&functionLock);
  for (int i = 0; i < functionCacheUsed; ++i)
    if (functionCache[i].function == function &&
        functionCache[i].sharedBytes < bytes)
      functionCache[i].sharedBytes = bytes;
  pthread_mutex_unlock(&functionLock);
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedBytes, void *stream,
                      void **params, void **extra, size_t paramsCount) {
  (void)paramsCount;
  double start = tracing() ? microseconds() : 0;
  enter();
  allowSharedMemory((CUfunction)function, sharedBytes);
  check(p_cuLaunchKernel((CUfunction)function, (unsigned)gridX, (unsigned)gridY,
                         (unsigned)gridZ, (unsigned)blockX, (unsigned)blockY,
                         (unsigned)blockZ, (unsigned)sharedBytes,
                         (CUstream)stream, params, extra),
        "cuLaunchKernel");
  if (tracing())
    trace("launch", start, (size_t)gridX);
}

void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                             intptr_t clusterY, intptr_t clusterZ,
                             intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                             int32_t sharedBytes, void *stream, void **params,
                             void **extra) {
  enter();
  allowSharedMemory((CUfunction)function, sharedBytes);
  CUlaunchAttribute attribute;
  memset(&attribute, 0, sizeof(attribute));
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = (unsigned)clusterX;
  attribute.value.clusterDim.y = (unsigned)clusterY;
  attribute.value.clusterDim.z = (unsigned)clusterZ;
  CUlaunchConfig config;
  memset(&config, 0, sizeof(config));
  config.gridDimX = (unsigned)gridX;
  config.gridDimY = (unsigned)gridY;
  config.gridDimZ = (unsigned)gridZ;
  config.blockDimX = (unsigned)blockX;
  config.blockDimY = (unsigned)blockY;
  config.blockDimZ = (unsigned)blockZ;
  config.sharedMemBytes = (unsigned)sharedBytes;
  config.hStream = (CUstream)stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  check(p_cuLaunchKernelEx(&config, (CUfunction)function, params, extra),
        "cuLaunchKernelEx");
}

void *mgpuStreamCreate(void) {
  enter();
  return currentStream();
}

void mgpuStreamDestroy(void *stream) {
  (void)stream; // hla's streams outlive a launch (see currentStream)
}

void mgpuStreamSynchronize(void *stream) {
  double start = tracing() ? microseconds() : 0;
  enter();
  check(p_cuStreamSynchronize((CUstream)stream), "kernel execution");
  if (tracing())
    trace("synchronize", start, 0);
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  enter();
  check(p_cuStreamWaitEvent((CUstream)stream, (CUevent)event, 0),
        "cuStreamWaitEvent");
}

void *mgpuEventCreate(void) {
  enter();
  CUevent event = NULL;
  check(p_cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return event;
}

void mgpuEventDestroy(void *event) {
  enter();
  check(p_cuEventDestroy((CUevent)event), "cuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  enter();
  check(p_cuEventSynchronize((CUevent)event), "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  enter();
  check(p_cuEventRecord((CUevent)event, (CUstream)stream), "cuEventRecord");
}

// Buffers between kernels (hla's gpu.alloc async: the segmented form's run
// summaries, the phases' scratch, the backward's saved states) come from
// the driver's stream-ordered pool, and a freed one is kept for the next
// allocation of the same size (the next call of the same artefact): 0.1 ms
// less per call of hla2's segmented kernels at 2x16x32768 on an H200 (its
// three 2 MB run summaries). A kept buffer remembers the stream it was
// freed on, by the driver's id for it (a handle can be reused after its
// stream is destroyed; the id is not): reused on that stream, stream order
// already puts the new writers after the old readers; on another, the
// context's work so far is waited for (rare: a caller that changed
// streams). Events would order the second case more finely, at 40-80 us
// per event call on an H200 for every buffer of every call (HLA_CUDA_TRACE).
// At most kBufferCacheBytes are kept, for the process's lifetime.
enum { kLiveBuffers = 64, kCachedBuffers = 16 };
static const size_t kBufferCacheBytes = (size_t)1 << 30;
typedef struct {
  CUdeviceptr pointer;
  size_t bytes;
  unsigned long long freedOn; // the freeing stream's id (cache entries only)
} DeviceBuffer;
static DeviceBuffer liveBuffers[kLiveBuffers];
static DeviceBuffer cachedBuffers[kCachedBuffers];
static int liveCount = 0, cachedCount = 0;
static size_t cachedBytes = 0;
static pthread_mutex_t bufferLock = PTHREAD_MUTEX_INITIALIZER;

/// A cached buffer of exactly `bytes`, made safe to use on `stream`, or 0.
static CUdeviceptr reuseBuffer(size_t bytes, CUstream stream) {
  unsigned long long id = 0;
  check(p_cuStreamGetId(stream, &id), "cuStreamGetId");
  pthread_mutex_lock(&bufferLock);
  for (int i = 0; i < cachedCount; ++i) {
    if (cachedBuffers[i].bytes != bytes)
      continue;
    DeviceBuffer buffer = cachedBuffers[i];
    cachedBuffers[i] = cachedBuffers[--cachedCount];
    cachedBytes -= bytes;
    pthread_mutex_unlock(&bufferLock);
    if (buffer.freedOn != id)
      check(p_cuCtxSynchronize(), "cuCtxSynchronize");
    return buffer.pointer;
  }
  pthread_mutex_unlock(&bufferLock);
  return 0;
}

static void *allocate(uint64_t bytes, void *stream, bool hostShared) {
  enter();
  CUdeviceptr pointer = 0;
  if (bytes == 0)
    return NULL;
  if (hostShared) {
    check(p_cuMemAllocManaged(&pointer, bytes, CU_MEM_ATTACH_GLOBAL),
          "cuMemAllocManaged");
    return (void *)pointer;
  }
  if (!stream) {
    check(p_cuMemAlloc(&pointer, bytes), "cuMemAlloc");
    return (void *)pointer;
  }
  pointer = reuseBuffer(bytes, (CUstream)stream);
  if (!pointer)
    check(p_cuMemAllocAsync(&pointer, bytes, (CUstream)stream),
          "cuMemAllocAsync");
  pthread_mutex_lock(&bufferLock);
  if (liveCount < kLiveBuffers)
    liveBuffers[liveCount++] = (DeviceBuffer){pointer, bytes, 0};
  pthread_mutex_unlock(&bufferLock);
  return (void *)pointer;
}

static void release(void *pointer, void *stream) {
  enter();
  if (!pointer)
    return;
  if (!stream) {
    check(p_cuMemFree((CUdeviceptr)pointer), "cuMemFree");
    return;
  }
  // A buffer of a known size is kept while the cache has room, with the
  // stream its last readers were queued on.
  pthread_mutex_lock(&bufferLock);
  size_t bytes = 0;
  for (int i = 0; i < liveCount; ++i)
    if (liveBuffers[i].pointer == (CUdeviceptr)pointer) {
      bytes = liveBuffers[i].bytes;
      liveBuffers[i] = liveBuffers[--liveCount];
      break;
    }
  pthread_mutex_unlock(&bufferLock);
  unsigned long long id = 0;
  if (bytes)
    check(p_cuStreamGetId((CUstream)stream, &id), "cuStreamGetId");
  pthread_mutex_lock(&bufferLock);
  int keep = bytes && cachedCount < kCachedBuffers &&
             cachedBytes + bytes <= kBufferCacheBytes;
  if (keep) {
    cachedBuffers[cachedCount++] =
        (DeviceBuffer){(CUdeviceptr)pointer, bytes, id};
    cachedBytes += bytes;
  }
  pthread_mutex_unlock(&bufferLock);
  if (keep)
    return;
  check(p_cuMemFreeAsync((CUdeviceptr)pointer, (CUstream)stream),
        "cuMemFreeAsync");
}

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  double start = tracing() ? microseconds() : 0;
  void *pointer = allocate(bytes, stream, hostShared);
  if (tracing())
    trace("allocate", start, (size_t)bytes);
  return pointer;
}

void mgpuMemFree(void *pointer, void *stream) {
  double start = tracing() ? microseconds() : 0;
  release(pointer, stream);
  if (tracing())
    trace("free", start, 0);
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  enter();
  check(p_cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes,
                        (CUstream)stream),
        "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream) {
  enter();
  check(p_cuMemsetD32Async((CUdeviceptr)dst, value, count, (CUstream)stream),
        "cuMemsetD32Async");
}

//===----------------------------------------------------------------------===//
// TMA tensor maps
//===----------------------------------------------------------------------===//
//
// Kernels load token tiles with cp.async.bulk.tensor, which reads a tensor
// map (128 bytes, 64-byte aligned) from device memory. A map describes one
// tensor at one address with one box shape: it is encoded once and kept, so
// that calls with the same buffers (a model's weights, a benchmark's
// inputs) do not re-encode and copy it. The copy to the device is ordered
// on the launches' stream, so a slot is rewritten only after the kernels
// queued before have read it.

enum { kTensorMapSlots = 64 };
typedef struct {
  uint64_t address;
  int32_t dtype;
  int64_t shape[4], box[4];
  CUdeviceptr map;
  uint64_t lastUse;
} TensorMapSlot;
static TensorMapSlot tensorMaps[kTensorMapSlots];
static uint64_t tensorMapClock = 0;
static pthread_mutex_t tensorMapLock = PTHREAD_MUTEX_INITIALIZER;

// hla's element codes (hla_runtime.h) to the driver's.
static bool tensorMapType(int32_t dtype, CUtensorMapDataType *type,
                          int64_t *bytes) {
  switch (dtype) {
  case HLA_F32:
    *type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    *bytes = 4;
    return true;
  case HLA_BF16:
    *type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    *bytes = 2;
    return true;
  case HLA_F16:
    *type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    *bytes = 2;
    return true;
  default:
    return false;
  }
}

uint64_t hla_cuda_tensor_map(uint64_t address, int32_t dtype, int64_t s0,
                             int64_t s1, int64_t s2, int64_t s3, int64_t b0,
                             int64_t b1, int64_t b2, int64_t b3) {
  enter();
  // Before the lock: creating hla's own stream may fail.
  CUstream stream = currentStream();
  const int64_t shape[4] = {s0, s1, s2, s3}, box[4] = {b0, b1, b2, b3};
  pthread_mutex_lock(&tensorMapLock);
  TensorMapSlot *victim = &tensorMaps[0];
  for (int i = 0; i < kTensorMapSlots; ++i) {
    TensorMapSlot *slot = &tensorMaps[i];
    if (slot->map && slot->address == address && slot->dtype == dtype &&
        !memcmp(slot->shape, shape, sizeof(shape)) &&
        !memcmp(slot->box, box, sizeof(box))) {
      slot->lastUse = ++tensorMapClock;
      pthread_mutex_unlock(&tensorMapLock);
      return (uint64_t)slot->map;
    }
    if (slot->lastUse < victim->lastUse)
      victim = slot;
  }
  // The driver's dimensions run innermost first; strides (bytes) are those
  // of a dense row-major tensor. Returns 0 (the kernel then copies with its
  // threads) when TMA cannot address the tensor: a base address or a
  // stride that is not a multiple of 16 bytes, or an unknown element type.
  CUtensorMapDataType type;
  int64_t bytes;
  cuuint64_t dims[4], strides[3];
  cuuint32_t boxDims[4], elementStrides[4] = {1, 1, 1, 1};
  bool ok = tensorMapType(dtype, &type, &bytes) && address % 16 == 0;
  int64_t stride = ok ? bytes : 0;
  for (int i = 0; ok && i < 4; ++i) {
    dims[i] = (cuuint64_t)shape[3 - i];
    boxDims[i] = (cuuint32_t)box[3 - i];
    if (i > 0) {
      strides[i - 1] = (cuuint64_t)stride;
      ok = stride % 16 == 0;
    }
    stride *= shape[3 - i];
  }
  CUtensorMap map;
  if (ok)
    ok = p_cuTensorMapEncodeTiled(
             &map, type, 4, (void *)address, dims, strides, boxDims,
             elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  if (!ok) {
    pthread_mutex_unlock(&tensorMapLock);
    return 0;
  }
  if (!victim->map)
    checkReleasing(p_cuMemAlloc(&victim->map, sizeof(CUtensorMap)),
                   "cuMemAlloc", &tensorMapLock);
  // A failed copy leaves the slot as it was: its key still describes the
  // map the device holds.
  checkReleasing(p_cuMemcpyHtoDAsync(victim->map, &map, sizeof(map), stream),
                 "cuMemcpyHtoDAsync", &tensorMapLock);
  victim->address = address;
  victim->dtype = dtype;
  memcpy(victim->shape, shape, sizeof(shape));
  memcpy(victim->box, box, sizeof(box));
  victim->lastUse = ++tensorMapClock;
  pthread_mutex_unlock(&tensorMapLock);
  return (uint64_t)victim->map;
}

//===----------------------------------------------------------------------===//
// Matrix products of model graphs: cuBLAS
//===----------------------------------------------------------------------===//
//
// Opened with dlopen on the first product (libcublas.so.13, .12, or the
// library $HLA_CUBLAS names), so that artefacts without matrix products do
// not need it. It runs on the primary context this runtime uses.

typedef cublasStatus_t (*CublasCreate)(cublasHandle_t *);
typedef cublasStatus_t (*CublasSetStream)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*CublasGemmStridedBatchedEx)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void *, const void *, cudaDataType, int, long long int, const void *,
    cudaDataType, int, long long int, const void *, void *, cudaDataType, int,
    long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

static pthread_once_t cublasOnce = PTHREAD_ONCE_INIT;
static cublasHandle_t cublasHandle = NULL;
static CublasSetStream p_cublasSetStream = NULL;
static CublasGemmStridedBatchedEx p_cublasGemmStridedBatchedEx = NULL;
static char cublasErrorText[256];
static const char *cublasError = NULL;

static void openCublas(void) {
  const char *override = getenv("HLA_CUBLAS");
  const char *names[] = {override && *override ? override : "libcublas.so.13",
                         "libcublas.so.12", "libcublas.so"};
  void *library = NULL;
  for (int i = 0; i < 3 && !library; ++i)
    library = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    snprintf(cublasErrorText, sizeof(cublasErrorText),
             "cannot load cuBLAS (%s; the model graph's matrix products run "
             "on it)",
             names[0]);
    cublasError = cublasErrorText;
    return;
  }
  CublasCreate create = (CublasCreate)dlsym(library, "cublasCreate_v2");
  p_cublasSetStream = (CublasSetStream)dlsym(library, "cublasSetStream_v2");
  p_cublasGemmStridedBatchedEx =
      (CublasGemmStridedBatchedEx)dlsym(library, "cublasGemmStridedBatchedEx");
  if (!create || !p_cublasSetStream || !p_cublasGemmStridedBatchedEx) {
    cublasError = "cuBLAS lacks cublasCreate_v2, cublasSetStream_v2 or "
                  "cublasGemmStridedBatchedEx";
    return;
  }
  if (create(&cublasHandle) != CUBLAS_STATUS_SUCCESS)
    cublasError = "cublasCreate failed";
}

// One operand of a row-major product as cuBLAS (column-major) sees it: the
// matrix is stored with unit stride along its columns (`transposed` false,
// leading dimension = row stride) or along its rows (`transposed` true).
static bool cublasOperand(int64_t rowStride, int64_t colStride, int64_t rows,
                          int64_t cols, bool *transposed, int64_t *leading) {
  if (colStride == 1 && (rows <= 1 || rowStride >= cols)) {
    *transposed = false;
    *leading = rows <= 1 ? (cols > 0 ? cols : 1) : rowStride;
    return true;
  }
  if (rowStride == 1 && (cols <= 1 || colStride >= rows)) {
    *transposed = true;
    *leading = cols <= 1 ? (rows > 0 ? rows : 1) : colStride;
    return true;
  }
  return false;
}

void hla_cuda_gemm(int32_t dtype, int64_t batch, int64_t M, int64_t N,
                   int64_t K, int64_t a, int64_t aRow, int64_t aCol,
                   int64_t aBatch, int64_t b, int64_t bRow, int64_t bCol,
                   int64_t bBatch, int64_t c, int64_t cRow, int64_t cCol,
                   int64_t cBatch) {
  enter();
  if (batch == 0 || M == 0 || N == 0 || K == 0)
    return; // C += A·B adds nothing
  pthread_once(&cublasOnce, openCublas);
  if (cublasError)
    fail("matrix product", cublasError);
  cudaDataType type = dtype == HLA_F32    ? CUDA_R_32F
                      : dtype == HLA_F16  ? CUDA_R_16F
                      : dtype == HLA_BF16 ? CUDA_R_16BF
                                          : (cudaDataType)-1;
  // Row-major C[M,N] += A[M,K]·B[K,N] is column-major Cᵀ += Bᵀ·Aᵀ: cuBLAS
  // computes the N x M matrix Cᵀ from Bᵀ (N x K) and Aᵀ (K x M).
  bool aT = false, bT = false, cT = false;
  int64_t lda = 1, ldb = 1, ldc = 1;
  if ((int)type < 0 || !cublasOperand(aRow, aCol, M, K, &aT, &lda) ||
      !cublasOperand(bRow, bCol, K, N, &bT, &ldb) ||
      !cublasOperand(cRow, cCol, M, N, &cT, &ldc) || cT || M > INT32_MAX ||
      N > INT32_MAX || K > INT32_MAX || batch > INT32_MAX)
    fail("matrix product",
         "an operand layout or element type cuBLAS cannot run (f32, f16 or "
         "bf16; unit stride along a dimension; the result row-major)");
  float one = 1.0f;
  if (p_cublasSetStream(cublasHandle, (cudaStream_t)currentStream()) !=
      CUBLAS_STATUS_SUCCESS)
    fail("matrix product", "cublasSetStream failed");
  cublasStatus_t status = p_cublasGemmStridedBatchedEx(
      cublasHandle, bT ? CUBLAS_OP_T : CUBLAS_OP_N,
      aT ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M, (int)K, &one,
      (const void *)b, type, (int)ldb, bBatch, (const void *)a, type, (int)lda,
      aBatch, &one, (void *)c, type, (int)ldc, cBatch, (int)batch,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) {
    char detail[64];
    snprintf(detail, sizeof(detail), "cublasGemmStridedBatchedEx status %d",
             (int)status);
    fail("matrix product", detail);
  }
}

void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream) {
  enter();
  check(p_cuMemsetD16Async((CUdeviceptr)dst, value, count, (CUstream)stream),
        "cuMemsetD16Async");
}

//===----------------------------------------------------------------------===//
// Executables: inputs to the device and results back
//===----------------------------------------------------------------------===//

void hla_runtime_prepare(const HlaSignature *sig, void **hostInputs,
                         void **hostOutputs, void **entryInputs,
                         void **entryOutputs) {
  (void)hostOutputs;
  enter();
  for (int i = 0; i < sig->numInputs; ++i) {
    size_t bytes = (size_t)(hla_num_elements(&sig->inputs[i]) *
                            hla_dtype_size(sig->inputs[i].dtype));
    CUdeviceptr p = 0;
    check(p_cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    if (bytes)
      check(p_cuMemcpyHtoD(p, hostInputs[i], bytes), "cuMemcpyHtoD");
    entryInputs[i] = (void *)p;
  }
  for (int j = 0; j < sig->numOutputs; ++j) {
    size_t bytes = (size_t)(hla_num_elements(&sig->outputs[j]) *
                            hla_dtype_size(sig->outputs[j].dtype));
    CUdeviceptr p = 0;
    check(p_cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    // NaN-like poison, as on the CPU: an output nothing writes shows up.
    if (bytes >= 4)
      check(p_cuMemsetD32Async(p, 0xffffffffu, bytes / 4, NULL),
            "cuMemsetD32Async");
    entryOutputs[j] = (void *)p;
  }
  check(p_cuCtxSynchronize(), "cuCtxSynchronize");
}

void hla_runtime_finish(const HlaSignature *sig, void **entryOutputs,
                        void **hostOutputs) {
  enter();
  check(p_cuCtxSynchronize(), "kernel execution");
  for (int j = 0; j < sig->numOutputs; ++j) {
    size_t bytes = (size_t)(hla_num_elements(&sig->outputs[j]) *
                            hla_dtype_size(sig->outputs[j].dtype));
    if (bytes)
      check(p_cuMemcpyDtoH(hostOutputs[j], (CUdeviceptr)entryOutputs[j], bytes),
            "cuMemcpyDtoH");
    check(p_cuMemFree((CUdeviceptr)entryOutputs[j]), "cuMemFree");
  }
}
