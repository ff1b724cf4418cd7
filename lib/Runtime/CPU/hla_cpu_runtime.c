//===- hla_cpu_runtime.c - Runtime of hla's CPU executables -------*- C -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Linked into every executable `hla-opt --emit=exe` produces (and, without
// main, into shared libraries). Plain C on purpose: an artefact depends on
// libc, libm and the OpenMP runtime only.
//
// The compiler emits, for the entry function,
//
//   int32_t hla_entry(void *const *inputs, void *const *outputs);
//   extern const char hla_entry_signature[];
//
// where the signature reads "name|in,in,...|out,..." and each tensor is
// "dtype:d0xd1x..." (dtype f32, f16, bf16, f64, i32 or i64; an empty shape
// is a scalar). Inputs and outputs are dense row-major buffers. The entry
// runs its code through hla_runtime_call (below) and returns non-zero when
// a run-time check failed; hla_last_error has the message.
//
//===----------------------------------------------------------------------===//

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../hla_runtime.h"

//===----------------------------------------------------------------------===//
// memrefCopy: the strided copy lowered memref.copy calls
//===----------------------------------------------------------------------===//

typedef struct {
  int64_t rank;
  void *descriptor;
} HlaUnrankedMemRef;

/// Copies between two memrefs of equal shape with arbitrary strides. The
/// descriptor is {allocated, aligned, offset, sizes[rank], strides[rank]}.
void memrefCopy(int64_t elementSize, HlaUnrankedMemRef *src,
                HlaUnrankedMemRef *dst) {
  int64_t rank = src->rank;
  char **srcPtrs = (char **)src->descriptor;
  char **dstPtrs = (char **)dst->descriptor;
  int64_t *srcMeta = (int64_t *)(srcPtrs + 2);
  int64_t *dstMeta = (int64_t *)(dstPtrs + 2);
  char *srcBase = srcPtrs[1] + srcMeta[0] * elementSize;
  char *dstBase = dstPtrs[1] + dstMeta[0] * elementSize;
  const int64_t *sizes = srcMeta + 1;
  const int64_t *srcStrides = srcMeta + 1 + rank;
  const int64_t *dstStrides = dstMeta + 1 + rank;
  if (rank == 0) {
    memcpy(dstBase, srcBase, elementSize);
    return;
  }
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d)
    total *= sizes[d];
  if (total == 0)
    return;
  // Walk the index space with an odometer; the innermost dimension is
  // copied as a block when both sides are contiguous in it.
  int64_t *index = (int64_t *)calloc(rank, sizeof(int64_t));
  int64_t inner = sizes[rank - 1];
  int contiguous = srcStrides[rank - 1] == 1 && dstStrides[rank - 1] == 1;
  for (;;) {
    int64_t srcOffset = 0, dstOffset = 0;
    for (int64_t d = 0; d < rank - 1; ++d) {
      srcOffset += index[d] * srcStrides[d];
      dstOffset += index[d] * dstStrides[d];
    }
    if (contiguous) {
      memcpy(dstBase + dstOffset * elementSize,
             srcBase + srcOffset * elementSize, inner * elementSize);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        memcpy(dstBase + (dstOffset + i * dstStrides[rank - 1]) * elementSize,
               srcBase + (srcOffset + i * srcStrides[rank - 1]) * elementSize,
               elementSize);
    }
    int64_t d = rank - 2;
    while (d >= 0 && ++index[d] == sizes[d])
      index[d--] = 0;
    if (d < 0)
      break;
  }
  free(index);
}

//===----------------------------------------------------------------------===//
// Errors: failed run-time checks and driver calls
//===----------------------------------------------------------------------===//
//
// hla_runtime_call runs an entry's body under setjmp; hla_abort, called by
// generated code (hla-lower-asserts) and by the target runtimes, stores the
// message and longjmps back to it, so the entry returns a status instead of
// ending the process. hla_runtime.h says why the jump crosses no frames
// that need cleaning up. Hidden: each artefact has its own copy of this
// state, and another artefact's copy must not interpose.

#define HLA_HIDDEN __attribute__((visibility("hidden")))

static _Thread_local jmp_buf *activeCall = NULL;
static _Thread_local char lastError[1024];
static _Thread_local int haveError = 0;

/// Runs fn(arg); 1 if it ended in hla_abort, else 0.
static int protect(void (*fn)(void *), void *arg) {
  jmp_buf here;
  jmp_buf *outer = activeCall;
  haveError = 0;
  if (setjmp(here)) {
    activeCall = outer;
    return 1;
  }
  activeCall = &here;
  fn(arg);
  activeCall = outer;
  return 0;
}

typedef struct {
  void (*body)(void *const *, void *const *);
  void *const *inputs;
  void *const *outputs;
} EntryCall;

__attribute__((weak)) HLA_HIDDEN void hla_runtime_call_done(void) {}

static void runEntry(void *arg) {
  EntryCall *call = (EntryCall *)arg;
  call->body(call->inputs, call->outputs);
  hla_runtime_call_done();
}

HLA_HIDDEN int hla_runtime_call(void (*body)(void *const *, void *const *),
                                void *const *inputs, void *const *outputs) {
  EntryCall call = {body, inputs, outputs};
  return protect(runEntry, &call);
}

// libomp's, where the artefact links it (CPU); absent from CUDA artefacts.
extern int omp_get_level(void) __attribute__((weak));

HLA_HIDDEN _Noreturn void hla_abort(const char *message) {
  // Unwinding must not leave an OpenMP parallel region (active or not): a
  // check inside one (e.g. the fused chunk form's cu_seqlens checks) still
  // ends the process, as does one on a worker thread (no active call).
  int inParallel = omp_get_level && omp_get_level() > 0;
  if (activeCall && !inParallel) {
    snprintf(lastError, sizeof(lastError), "%s", message);
    haveError = 1;
    longjmp(*activeCall, 1);
  }
  fflush(stdout);
  fprintf(stderr, "error: %s\n", message);
  exit(2);
}

const char *hla_last_error(void) { return haveError ? lastError : NULL; }

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

/// Parses "dtype:d0xd1" from *p up to a ',' or '|' or the end.
static int parseTensor(const char **p, HlaTensorInfo *t) {
  static const char *names[] = {"f32", "f16", "bf16", "f64", "i32", "i64"};
  const char *colon = strchr(*p, ':');
  if (!colon)
    return -1;
  t->dtype = -1;
  for (int i = 0; i < 6; ++i)
    if ((size_t)(colon - *p) == strlen(names[i]) &&
        strncmp(*p, names[i], colon - *p) == 0)
      t->dtype = i;
  if (t->dtype < 0)
    return -1;
  const char *s = colon + 1;
  t->rank = 0;
  while (*s && *s != ',' && *s != '|') {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || t->rank >= 16)
      return -1;
    t->shape[t->rank++] = v;
    s = end;
    if (*s == 'x')
      ++s;
  }
  *p = s;
  return 0;
}

static int parseList(const char **p, HlaTensorInfo *list, int *count) {
  *count = 0;
  while (**p && **p != '|') {
    if (*count >= 64 || parseTensor(p, &list[(*count)++]))
      return -1;
    if (**p == ',')
      ++*p;
  }
  return 0;
}

int hla_parse_signature(const char *text, HlaSignature *sig) {
  const char *bar = strchr(text, '|');
  if (!bar || (size_t)(bar - text) >= sizeof(sig->name))
    return -1;
  memcpy(sig->name, text, bar - text);
  sig->name[bar - text] = 0;
  const char *p = bar + 1;
  if (parseList(&p, sig->inputs, &sig->numInputs) || *p != '|')
    return -1;
  ++p;
  return parseList(&p, sig->outputs, &sig->numOutputs);
}

int64_t hla_dtype_size(int dtype) {
  static const int64_t sizes[] = {4, 2, 2, 8, 4, 8};
  return sizes[dtype];
}

int64_t hla_num_elements(const HlaTensorInfo *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; ++d)
    n *= t->shape[d];
  return n;
}

#ifndef HLA_RUNTIME_NO_MAIN
// Everything below serves the executables' main only.

static const char *dtypeName(int dtype) {
  static const char *names[] = {"float32", "float16", "bfloat16",
                                "float64", "int32",   "int64"};
  return names[dtype];
}

static size_t dtypeSize(int dtype) { return (size_t)hla_dtype_size(dtype); }

static int64_t numElements(const HlaTensorInfo *t) {
  return hla_num_elements(t);
}

static void formatShape(const HlaTensorInfo *t, char *buffer, size_t size) {
  size_t used = snprintf(buffer, size, "[");
  for (int d = 0; d < t->rank && used < size; ++d)
    used += snprintf(buffer + used, size - used, d ? ", %lld" : "%lld",
                     (long long)t->shape[d]);
  if (used < size)
    snprintf(buffer + used, size - used, "]");
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

static uint16_t floatToBF16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN stays NaN
    return (uint16_t)((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1); // to nearest even
  return (uint16_t)((bits + rounding) >> 16);
}

static float bf16ToFloat(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToHalf(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  uint32_t sign = (bits >> 16) & 0x8000;
  int32_t exponent = (int32_t)((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff)
    return (uint16_t)(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  if (exponent >= 31)
    return (uint16_t)(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10)
      return (uint16_t)sign;
    mantissa |= 0x800000;
    uint32_t shift = (uint32_t)(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1)))
      ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return (uint16_t)half;
}

//===----------------------------------------------------------------------===//
// .npy files
//===----------------------------------------------------------------------===//

/// What a .npy header says about the array that follows it.
typedef struct {
  char descr[8];
  int rank;
  int64_t shape[16];
} NpyHeader;

static int npyDtype(const char *descr) {
  if (!strcmp(descr, "<f4"))
    return HLA_F32;
  if (!strcmp(descr, "<f2"))
    return HLA_F16;
  if (!strcmp(descr, "<f8"))
    return HLA_F64;
  if (!strcmp(descr, "<i4"))
    return HLA_I32;
  if (!strcmp(descr, "<i8"))
    return HLA_I64;
  return -1;
}

/// Bytes of one element of a supported descr.
static size_t npyItemSize(const char *descr) {
  return (size_t)hla_dtype_size(npyDtype(descr));
}

static const char *skipSpaces(const char *s) {
  while (*s == ' ' || *s == '\t')
    ++s;
  return s;
}

/// The value after `key` in the header dictionary, or NULL.
static const char *headerValue(const char *header, const char *key) {
  const char *at = strstr(header, key);
  return at ? skipSpaces(at + strlen(key)) : NULL;
}

/// Parses the shape tuple at `s` ("(1, 200, 2, 32)", "(5,)", "()").
/// Every entry must be a non-negative decimal integer; the element count
/// must fit in 64 bits.
static int parseNpyShape(const char *s, NpyHeader *out, char *error,
                         size_t errorSize) {
  if (*s != '(') {
    snprintf(error, errorSize, "malformed shape in .npy header");
    return -1;
  }
  ++s;
  int rank = 0;
  uint64_t count = 1;
  int overflow = 0;
  for (;;) {
    s = skipSpaces(s);
    if (*s == ')')
      break;
    const char *begin = s;
    while (*s && *s != ',' && *s != ')')
      ++s;
    if (!*s) {
      snprintf(error, errorSize, "malformed shape in .npy header");
      return -1;
    }
    const char *end = s;
    while (end > begin && (end[-1] == ' ' || end[-1] == '\t'))
      --end;
    int length = (int)(end - begin);
    const char *digits = begin + (begin < end && *begin == '-');
    int integer = digits < end;
    for (const char *c = digits; c < end; ++c)
      integer &= *c >= '0' && *c <= '9';
    if (!integer) {
      snprintf(error, errorSize,
               "dimension %d of the shape ('%.*s') is not an integer", rank,
               length > 64 ? 64 : length, begin);
      return -1;
    }
    if (*begin == '-') {
      snprintf(error, errorSize, "dimension %d of the shape is negative (%.*s)",
               rank, length > 64 ? 64 : length, begin);
      return -1;
    }
    errno = 0;
    unsigned long long value = strtoull(begin, NULL, 10);
    if (errno == ERANGE || value > (unsigned long long)INT64_MAX) {
      snprintf(error, errorSize,
               "dimension %d of the shape (%.*s) is too large", rank,
               length > 64 ? 64 : length, begin);
      return -1;
    }
    if (rank < 16)
      out->shape[rank] = (int64_t)value;
    ++rank;
    overflow |= __builtin_mul_overflow(count, (uint64_t)value, &count);
    if (*s == ',')
      ++s;
  }
  if (rank > 16) {
    snprintf(error, errorSize,
             "the shape has %d dimensions; hla takes at most 16", rank);
    return -1;
  }
  out->rank = rank;
  if (overflow || count > (uint64_t)INT64_MAX) {
    snprintf(error, errorSize,
             "the shape's element count does not fit in 64 bits");
    return -1;
  }
  return 0;
}

/// Reads the preamble and header of the .npy file open as `f` (of
/// `fileSize` bytes, or -1 if unknown), leaving `f` at the first data byte.
/// Returns 0, or -1 with `error` set.
static int readNpyHeader(FILE *f, long long fileSize, NpyHeader *out,
                         char *error, size_t errorSize) {
  unsigned char preamble[12];
  size_t got = fread(preamble, 1, 8, f);
  if (got < 6 || memcmp(preamble, "\x93NUMPY", 6) != 0) {
    snprintf(error, errorSize, "not a .npy file (bad magic)");
    return -1;
  }
  if (got < 8) {
    snprintf(error, errorSize, "truncated .npy preamble");
    return -1;
  }
  int major = preamble[6], minor = preamble[7];
  // 1.0 has a 2-byte header length, 2.0 a 4-byte one, 3.0 as 2.0 with a
  // UTF-8 header (whose keys and values hla reads are ASCII).
  if (major < 1 || major > 3 || minor != 0) {
    snprintf(error, errorSize,
             "unsupported .npy format version %d.%d (hla reads 1.0, 2.0 "
             "and 3.0)",
             major, minor);
    return -1;
  }
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (fread(preamble + 8, 1, lengthBytes, f) != lengthBytes) {
    snprintf(error, errorSize, "truncated .npy header");
    return -1;
  }
  size_t headerLength = 0;
  for (size_t i = lengthBytes; i-- > 0;)
    headerLength = headerLength << 8 | preamble[8 + i];
  long long available =
      fileSize < 0 ? -1 : fileSize - (long long)(8 + lengthBytes);
  if (available >= 0 && (long long)headerLength > available) {
    snprintf(error, errorSize,
             "truncated .npy header: it declares %zu bytes, the file has %lld "
             "after the preamble",
             headerLength, available);
    return -1;
  }
  // numpy's headers are far smaller; this bounds the allocation where the
  // file's size is unknown (a pipe).
  if (headerLength > (1u << 20)) {
    snprintf(error, errorSize,
             ".npy header of %zu bytes (more than 1 MiB) is not supported",
             headerLength);
    return -1;
  }
  char *header = (char *)malloc(headerLength + 1);
  if (!header) {
    snprintf(error, errorSize,
             "out of memory reading a .npy header of %zu bytes", headerLength);
    return -1;
  }
  if (fread(header, 1, headerLength, f) != headerLength) {
    snprintf(error, errorSize, "truncated .npy header");
    free(header);
    return -1;
  }
  header[headerLength] = 0;
  int status = -1;
  const char *descr = headerValue(header, "'descr':");
  const char *order = headerValue(header, "'fortran_order':");
  const char *shape = headerValue(header, "'shape':");
  const char *close = descr && *descr == '\'' ? strchr(descr + 1, '\'') : NULL;
  if (!descr || !order || !shape) {
    snprintf(error, errorSize, "malformed .npy header");
  } else if (!close || close - descr - 1 >= (long)sizeof(out->descr)) {
    snprintf(error, errorSize, "malformed dtype in .npy header");
  } else if (!strncmp(order, "True", 4)) {
    snprintf(error, errorSize, "Fortran-ordered arrays are not supported");
  } else if (strncmp(order, "False", 5)) {
    snprintf(error, errorSize, "malformed fortran_order in .npy header");
  } else {
    memcpy(out->descr, descr + 1, close - descr - 1);
    out->descr[close - descr - 1] = 0;
    status = parseNpyShape(shape, out, error, errorSize);
  }
  free(header);
  return status;
}

static int writeNpy(const char *path, const char *descr, const int64_t *shape,
                    int rank, const void *data, size_t bytes) {
  char dict[512];
  int used =
      snprintf(dict, sizeof(dict),
               "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int d = 0; d < rank; ++d)
    used += snprintf(dict + used, sizeof(dict) - used, "%lld,%s",
                     (long long)shape[d], d + 1 < rank ? " " : "");
  used += snprintf(dict + used, sizeof(dict) - used, "), }");
  // Pad the header so that the data starts at a multiple of 64.
  size_t total = 10 + used + 1;
  size_t padded = (total + 63) / 64 * 64;
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  size_t headerLength = padded - 10;
  magic[8] = headerLength & 0xff;
  magic[9] = (headerLength >> 8) & 0xff;
  fwrite(magic, 1, 10, f);
  fwrite(dict, 1, used, f);
  for (size_t i = 10 + used; i < padded - 1; ++i)
    fputc(' ', f);
  fputc('\n', f);
  int ok = fwrite(data, 1, bytes, f) == bytes;
  return fclose(f) == 0 && ok ? 0 : -1;
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

/// xorshift64*: deterministic inputs for --random.
static uint64_t nextRandom(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 2685821657736338717ull;
}

static double uniform01(uint64_t *state) {
  return ((nextRandom(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/// Standard normal samples (Box-Muller), scaled by `scale`; integer tensors
/// (token ids) get uniform integers in [0, 256).
static void fillRandom(void *buffer, const HlaTensorInfo *t, uint64_t *state,
                       double scale) {
  int64_t n = numElements(t);
  if (t->dtype == HLA_I32 || t->dtype == HLA_I64) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t id = (int64_t)(nextRandom(state) >> 56);
      if (t->dtype == HLA_I32)
        ((int32_t *)buffer)[i] = (int32_t)id;
      else
        ((int64_t *)buffer)[i] = id;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    double u1 = uniform01(state), u2 = uniform01(state);
    float x =
        (float)(scale * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    switch (t->dtype) {
    case HLA_F32:
      ((float *)buffer)[i] = x;
      break;
    case HLA_F64:
      ((double *)buffer)[i] = x;
      break;
    case HLA_F16:
      ((uint16_t *)buffer)[i] = floatToHalf(x);
      break;
    case HLA_BF16:
      ((uint16_t *)buffer)[i] = floatToBF16(x);
      break;
    }
  }
}

/// Loads argument `index` of type `t` from the .npy file `path` into a new
/// buffer. The header is checked against `t` before anything the file
/// declares is allocated, and the data against the file's size; bf16
/// arguments take float32 files (numpy has no bfloat16). Returns 0, or -1
/// after printing why not.
static int loadInput(const char *path, const HlaTensorInfo *t, int index,
                     void **buffer) {
  char error[1024];
  error[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(error, sizeof(error), "cannot open: %s", strerror(errno));
    goto fail;
  }
  struct stat info;
  int known = fstat(fileno(f), &info) == 0;
  if (known && S_ISDIR(info.st_mode)) {
    snprintf(error, sizeof(error), "is a directory, not a .npy file");
    goto fail;
  }
  // A pipe or device has no size to check against.
  long long fileSize =
      known && S_ISREG(info.st_mode) ? (long long)info.st_size : -1;
  NpyHeader header;
  if (readNpyHeader(f, fileSize, &header, error, sizeof(error)))
    goto fail;
  int dtype = npyDtype(header.descr);
  if (dtype < 0) {
    snprintf(error, sizeof(error), "unsupported dtype '%s'", header.descr);
    goto fail;
  }
  int shapeOk = header.rank == t->rank;
  for (int d = 0; shapeOk && d < t->rank; ++d)
    shapeOk = header.shape[d] == t->shape[d];
  int dtypeOk = dtype == t->dtype || (t->dtype == HLA_BF16 && dtype == HLA_F32);
  if (!shapeOk || !dtypeOk) {
    char want[400], got[400];
    HlaTensorInfo gotInfo;
    gotInfo.rank = header.rank;
    memcpy(gotInfo.shape, header.shape, sizeof(header.shape));
    formatShape(t, want, sizeof(want));
    formatShape(&gotInfo, got, sizeof(got));
    snprintf(error, sizeof(error), "expected %s%s %s, got %s %s",
             dtypeName(t->dtype), t->dtype == HLA_BF16 ? " (as float32)" : "",
             want, dtypeName(dtype), got);
    goto fail;
  }
  // From here on the sizes are the signature's.
  size_t count = (size_t)numElements(t);
  size_t fileBytes = count * npyItemSize(header.descr);
  long long position = ftell(f);
  if (fileSize >= 0 && position >= 0 &&
      (unsigned long long)(fileSize - position) < fileBytes) {
    snprintf(error, sizeof(error),
             "truncated data: expected %zu bytes, the file has %lld", fileBytes,
             fileSize - position);
    goto fail;
  }
  size_t bytes = count * dtypeSize(t->dtype);
  *buffer = malloc(bytes + 64);
  void *staging = t->dtype == HLA_BF16 ? malloc(fileBytes + 1) : *buffer;
  if (!*buffer || !staging) {
    snprintf(error, sizeof(error),
             "out of memory: the argument needs %zu bytes", bytes + fileBytes);
    if (staging != *buffer)
      free(staging);
    free(*buffer);
    *buffer = NULL;
    goto fail;
  }
  if (fread(staging, 1, fileBytes, f) != fileBytes) {
    snprintf(error, sizeof(error), "truncated data: expected %zu bytes",
             fileBytes);
    if (staging != *buffer)
      free(staging);
    free(*buffer);
    *buffer = NULL;
    goto fail;
  }
  if (t->dtype == HLA_BF16) {
    for (size_t i = 0; i < count; ++i)
      ((uint16_t *)*buffer)[i] = floatToBF16(((float *)staging)[i]);
    free(staging);
  }
  fclose(f);
  return 0;
fail:
  if (f)
    fclose(f);
  fprintf(stderr, "error: argument %d ('%s'): %s\n", index, path, error);
  return -1;
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

extern int32_t hla_entry(void *const *inputs, void *const *outputs);
extern const char hla_entry_signature[];

// CPU entries take the host buffers; a device runtime overrides these.
__attribute__((weak)) void hla_runtime_prepare(const HlaSignature *sig,
                                               void **hostInputs,
                                               void **hostOutputs,
                                               void **entryInputs,
                                               void **entryOutputs) {
  for (int i = 0; i < sig->numInputs; ++i)
    entryInputs[i] = hostInputs[i];
  for (int j = 0; j < sig->numOutputs; ++j)
    entryOutputs[j] = hostOutputs[j];
}

__attribute__((weak)) void hla_runtime_finish(const HlaSignature *sig,
                                              void **entryOutputs,
                                              void **hostOutputs) {
  (void)sig;
  (void)entryOutputs;
  (void)hostOutputs;
}

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/// The device runtime's hooks, run under protect: a CUDA runtime's driver
/// errors end in hla_abort.
typedef struct {
  const HlaSignature *sig;
  void **hostInputs, **hostOutputs, **entryInputs, **entryOutputs;
} RuntimeHook;

static void prepareHook(void *arg) {
  RuntimeHook *h = (RuntimeHook *)arg;
  hla_runtime_prepare(h->sig, h->hostInputs, h->hostOutputs, h->entryInputs,
                      h->entryOutputs);
}

static void finishHook(void *arg) {
  RuntimeHook *h = (RuntimeHook *)arg;
  hla_runtime_finish(h->sig, h->entryOutputs, h->hostOutputs);
}

/// Prints the message of the failed call; the exit status of main.
static int reportFailure(void) {
  const char *message = hla_last_error();
  fflush(stdout);
  fprintf(stderr, "error: %s\n", message ? message : "unknown failure");
  return 2;
}

/// A buffer of `t`'s size plus slack, or NULL after printing why not.
static void *allocateTensor(const HlaTensorInfo *t, const char *what,
                            int index) {
  size_t bytes = (size_t)numElements(t) * dtypeSize(t->dtype);
  void *buffer = malloc(bytes + 64);
  if (!buffer)
    fprintf(stderr, "error: out of memory: %s %d needs %zu bytes\n", what,
            index, bytes);
  return buffer;
}

static int compareDoubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void usage(const char *program, const HlaSignature *sig) {
  fprintf(stderr,
          "usage: %s INPUT.npy... [-o DIR] | --random SEED [-o DIR]"
          " [--bench N]\n"
          "entry '%s' takes %d input(s):\n",
          program, sig->name, sig->numInputs);
  for (int i = 0; i < sig->numInputs; ++i) {
    char shape[256];
    formatShape(&sig->inputs[i], shape, sizeof(shape));
    fprintf(stderr, "  %d: %s %s\n", i, dtypeName(sig->inputs[i].dtype), shape);
  }
}

int main(int argc, char **argv) {
  HlaSignature sig;
  if (hla_parse_signature(hla_entry_signature, &sig)) {
    fprintf(stderr, "error: the executable's signature is malformed\n");
    return 2;
  }
  const char *outDir = NULL;
  const char *files[64];
  int numFiles = 0, randomInputs = 0, bench = 0;
  uint64_t seed = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--random") ||
        !strcmp(argv[i], "--bench")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "error: %s needs a value\n", argv[i]);
        return 2;
      }
      char *end;
      if (!strcmp(argv[i], "-o")) {
        outDir = argv[++i];
      } else if (!strcmp(argv[i], "--random")) {
        randomInputs = 1;
        seed = strtoull(argv[++i], &end, 10);
        if (*end) {
          fprintf(stderr, "error: --random needs an integer seed\n");
          return 2;
        }
      } else {
        bench = (int)strtol(argv[++i], &end, 10);
        if (*end || bench < 1) {
          fprintf(stderr, "error: --bench needs a positive count\n");
          return 2;
        }
      }
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(argv[0], &sig);
      return 0;
    } else if (argv[i][0] == '-' && argv[i][1] == '-') {
      fprintf(stderr, "error: unknown option '%s'\n", argv[i]);
      usage(argv[0], &sig);
      return 2;
    } else {
      if (numFiles >= 64) {
        fprintf(stderr, "error: too many inputs\n");
        return 2;
      }
      files[numFiles++] = argv[i];
    }
  }
  if (randomInputs && numFiles) {
    fprintf(stderr, "error: give either input files or --random, not both\n");
    return 2;
  }
  if (!randomInputs && numFiles != sig.numInputs) {
    fprintf(stderr, "error: '%s' takes %d input(s), got %d%s\n", sig.name,
            sig.numInputs, numFiles,
            numFiles < sig.numInputs ? " (missing argument)" : "");
    usage(argv[0], &sig);
    return 2;
  }

  // Every exit from here on frees the tensors (`done`): the program is
  // also run under LeakSanitizer.
  void *inputs[64] = {0}, *outputs[64] = {0};
  double *times = NULL;
  float *widened = NULL;
  int status = 2;
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  for (int i = 0; i < sig.numInputs; ++i) {
    const HlaTensorInfo *t = &sig.inputs[i];
    if (randomInputs) {
      if (!(inputs[i] = allocateTensor(t, "input", i)))
        goto done;
      fillRandom(inputs[i], t, &state, 0.5);
      continue;
    }
    if (loadInput(files[i], t, i, &inputs[i]))
      goto done;
  }
  for (int j = 0; j < sig.numOutputs; ++j) {
    const HlaTensorInfo *t = &sig.outputs[j];
    if (!(outputs[j] = allocateTensor(t, "output", j)))
      goto done;
    // A poison pattern: an output the code never writes shows up as NaN.
    memset(outputs[j], 0xff, (size_t)numElements(t) * dtypeSize(t->dtype));
  }

  void *entryInputs[64], *entryOutputs[64];
  RuntimeHook hook = {&sig, inputs, outputs, entryInputs, entryOutputs};
  if (protect(prepareHook, &hook)) {
    status = reportFailure();
    goto done;
  }
  if (bench) {
    if (hla_entry(entryInputs, entryOutputs)) { // warm-up
      status = reportFailure();
      goto done;
    }
    times = (double *)malloc(sizeof(double) * bench);
    if (!times) {
      fprintf(stderr, "error: out of memory: --bench %d\n", bench);
      goto done;
    }
    for (int r = 0; r < bench; ++r) {
      double start = nowMs();
      if (hla_entry(entryInputs, entryOutputs)) {
        status = reportFailure();
        goto done;
      }
      times[r] = nowMs() - start;
    }
    qsort(times, bench, sizeof(double), compareDoubles);
    double median = bench % 2 ? times[bench / 2]
                              : 0.5 * (times[bench / 2 - 1] + times[bench / 2]);
    printf("median_ms=%.4f min_ms=%.4f runs=%d\n", median, times[0], bench);
  } else if (hla_entry(entryInputs, entryOutputs)) {
    status = reportFailure();
    goto done;
  }
  if (protect(finishHook, &hook)) {
    status = reportFailure();
    goto done;
  }

  if (outDir) {
    if (mkdir(outDir, 0777) && errno != EEXIST) {
      fprintf(stderr, "error: cannot create '%s': %s\n", outDir,
              strerror(errno));
      goto done;
    }
    for (int j = 0; j < sig.numOutputs; ++j) {
      const HlaTensorInfo *t = &sig.outputs[j];
      char path[4096];
      snprintf(path, sizeof(path), "%s/out%d.npy", outDir, j);
      size_t count = (size_t)numElements(t);
      const char *descr = t->dtype == HLA_F32   ? "<f4"
                          : t->dtype == HLA_F16 ? "<f2"
                          : t->dtype == HLA_F64 ? "<f8"
                          : t->dtype == HLA_I32 ? "<i4"
                          : t->dtype == HLA_I64 ? "<i8"
                                                : "<f4";
      const void *data = outputs[j];
      if (t->dtype == HLA_BF16) {
        // Written as float32: numpy cannot read bfloat16.
        widened = (float *)malloc(count * sizeof(float) + 1);
        if (!widened) {
          fprintf(stderr, "error: out of memory writing '%s'\n", path);
          goto done;
        }
        for (size_t i = 0; i < count; ++i)
          widened[i] = bf16ToFloat(((uint16_t *)outputs[j])[i]);
        data = widened;
      }
      size_t bytes = count * (t->dtype == HLA_BF16 ? 4 : dtypeSize(t->dtype));
      if (writeNpy(path, descr, t->shape, t->rank, data, bytes)) {
        fprintf(stderr, "error: cannot write '%s'\n", path);
        goto done;
      }
      free(widened);
      widened = NULL;
    }
  }
  status = 0;
done:
  free(widened);
  free(times);
  for (int i = 0; i < 64; ++i) {
    free(inputs[i]);
    free(outputs[i]);
  }
  return status;
}

#endif // HLA_RUNTIME_NO_MAIN
