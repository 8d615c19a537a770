/* tests/testutil/fake_libcuda.c -- a stand-in libcuda.so.1 for CPU tests of
 * the instrumentation runtime (backend/instrumentation/runtime.c): the pool,
 * the copy stream, re-arming and the decoder threads, with no GPU.
 *
 * Device memory is host memory (a device pointer is a host address, so a
 * test plays the kernel by writing through it between cproton_instr_alloc
 * and cproton_instr_launch), every asynchronous call completes before it
 * returns, events are always complete, and no module loads (so the device
 * reduction falls back to the host decoder, as on a GPU older than sm_80).
 * New allocations are filled with 0xA5, as real device memory is not
 * zeroed: whatever the runtime forgets to clear shows up as garbage.
 * Only the entry points backend/cudadrv.h resolves exist. Test code, never
 * installed; built as tests/fakecuda/libcuda.so.1 and found through
 * LD_LIBRARY_PATH. fake_cuda_counts() lets a test see the calls made. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { OK = 0, BAD_VALUE = 1, NO_IMAGE = 200, NOT_FOUND = 500 };

static struct {
  unsigned long allocs, frees, copies, memsets, memsets_2d, launches;
} counts;

/* The calls made so far (for tests; not a driver entry point). */
void fake_cuda_counts(unsigned long out[6]) {
  const unsigned long *c = &counts.allocs;
  for (int i = 0; i < 6; i++)
    out[i] = __atomic_load_n(&c[i], __ATOMIC_RELAXED);
}

static void bump(unsigned long *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }

static void *garbage(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p)
    memset(p, 0xA5, n);
  return p;
}

CUresult cuInit(unsigned flags) { return flags ? BAD_VALUE : OK; }
CUresult cuCtxGetCurrent(void **ctx) { return *ctx = (void *)0x10, OK; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx ? OK : BAD_VALUE; }
CUresult cuCtxGetDevice(int *dev) { return *dev = 0, OK; }
CUresult cuDeviceGet(int *dev, int ordinal) { return *dev = ordinal, ordinal == 0 ? OK : BAD_VALUE; }

/* An H100-like device: 1.98 GHz, 132 SMs, compute capability 9.0. */
CUresult cuDeviceGetAttribute(int *value, int attrib, int dev) {
  static const struct { int attrib, value; } attrs[] = {
      {13, 1980000}, {16, 132}, {36, 2619000}, {37, 5120}, {75, 9}, {76, 0}};
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
    if (attrs[i].attrib == attrib)
      return *value = attrs[i].value, dev == 0 ? OK : BAD_VALUE;
  return *value = 0, OK;
}

CUresult cuMemAlloc_v2(uint64_t *p, size_t size) {
  void *m = garbage(size);
  bump(&counts.allocs);
  return (*p = (uint64_t)(uintptr_t)m) ? OK : 2;
}
CUresult cuMemFree_v2(uint64_t p) { return bump(&counts.frees), free((void *)(uintptr_t)p), OK; }
CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags) { return (*p = garbage(size)) && !flags ? OK : 2; }
CUresult cuMemFreeHost(void *p) { return free(p), OK; }

CUresult cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *s) {
  (void)s;
  bump(&counts.copies);
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return OK;
}

CUresult cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, void *s) {
  (void)s;
  bump(&counts.memsets);
  memset((void *)(uintptr_t)dst, v, n);
  return OK;
}

CUresult cuMemsetD2D32Async(uint64_t dst, size_t pitch, unsigned v, size_t w, size_t h, void *s) {
  (void)s;
  bump(&counts.memsets_2d);
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++)
      memcpy((char *)(uintptr_t)dst + r * pitch + 4 * i, &v, 4);
  return OK;
}

CUresult cuStreamCreate(void **s, unsigned flags) { return (void)flags, *s = (void *)0x20, OK; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) { return (void)s, (void)flags, e ? OK : BAD_VALUE; }
CUresult cuEventCreate(void **e, unsigned flags) { return (void)flags, (*e = malloc(1)) ? OK : 2; }
CUresult cuEventRecord(void *e, void *s) { return (void)s, e ? OK : BAD_VALUE; }
CUresult cuEventQuery(void *e) { return e ? OK : BAD_VALUE; }
CUresult cuEventSynchronize(void *e) { return e ? OK : BAD_VALUE; }
CUresult cuEventDestroy_v2(void *e) { return free(e), OK; }
CUresult cuStreamIsCapturing(void *s, int *status) { return (void)s, *status = 0, OK; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { return a && b ? (*ms = 0.001f, OK) : BAD_VALUE; }

/* No module loads: the runtime must fall back to decoding on the host. */
CUresult cuModuleLoadData(void **m, const void *image) { return (void)image, *m = NULL, NO_IMAGE; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { return (void)m, (void)name, *f = NULL, NOT_FOUND; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *s, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)s, (void)params;
  (void)extra;
  bump(&counts.launches);
  return NOT_FOUND;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == NO_IMAGE ? "fake driver: no module loads" : "fake driver error";
  return OK;
}

/* The rest of the one driver table (backend/cudadrv.h), which the CUPTI
 * loader shares: one device, its primary context always active. */
CUresult cuDriverGetVersion(int *v) { return *v = 13000, OK; }
CUresult cuDeviceGetCount(int *n) { return *n = 1, OK; }
CUresult cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active) {
  return (void)dev, *flags = 0, *active = 1, OK;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { return (void)dev, *ctx = (void *)0x10, OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return (void)dev, OK; }
CUresult cuCtxSynchronize(void) { return OK; }
