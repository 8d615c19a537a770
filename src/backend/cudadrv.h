/* backend/cudadrv.h -- the CUDA driver functions cproton calls, resolved
 * once with dlopen/dlsym into one table (cp_cudadrv_*), shared by the
 * instrumentation runtime and the CUPTI backend. No CUDA header is
 * needed: the few types are declared here with the driver's ABI. */
#ifndef CP_BACKEND_CUDADRV_H
#define CP_BACKEND_CUDADRV_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/device.h"

typedef int cp_curesult; /* CUresult: 0 = CUDA_SUCCESS */
typedef uint64_t cp_cudeviceptr;
typedef void *cp_custream;
typedef void *cp_cuevent;
typedef void *cp_cucontext;
typedef int cp_cudevice;
typedef void *cp_cumodule;
typedef void *cp_cufunction;

/* X(return, name, symbol, (params)) -- the table of driver entry points. */
#define CP_CUDADRV_LIST(X)                                                     \
  X(cuInit, "cuInit", (unsigned flags))                                        \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", (cp_cucontext * ctx))                  \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (cp_cucontext ctx))                    \
  X(cuCtxGetDevice, "cuCtxGetDevice", (cp_cudevice * dev))                     \
  X(cuDeviceGet, "cuDeviceGet", (cp_cudevice * dev, int ordinal))              \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute",                              \
    (int *value, int attrib, cp_cudevice dev))                                 \
  X(cuMemAlloc, "cuMemAlloc_v2", (cp_cudeviceptr * p, size_t size))            \
  X(cuMemFree, "cuMemFree_v2", (cp_cudeviceptr p))                             \
  X(cuMemHostAlloc, "cuMemHostAlloc", (void **p, size_t size, unsigned flags)) \
  X(cuMemFreeHost, "cuMemFreeHost", (void *p))                                 \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                 \
    (void *dst, cp_cudeviceptr src, size_t size, cp_custream s))               \
  X(cuMemsetD8Async, "cuMemsetD8Async",                                        \
    (cp_cudeviceptr dst, unsigned char v, size_t n, cp_custream s))            \
  X(cuMemsetD2D32Async, "cuMemsetD2D32Async",                                  \
    (cp_cudeviceptr dst, size_t pitch, unsigned v, size_t w, size_t h,         \
     cp_custream s))                                                           \
  X(cuStreamCreate, "cuStreamCreate", (cp_custream * s, unsigned flags))       \
  X(cuStreamWaitEvent, "cuStreamWaitEvent",                                    \
    (cp_custream s, cp_cuevent e, unsigned flags))                             \
  X(cuEventCreate, "cuEventCreate", (cp_cuevent * e, unsigned flags))          \
  X(cuEventRecord, "cuEventRecord", (cp_cuevent e, cp_custream s))             \
  X(cuEventQuery, "cuEventQuery", (cp_cuevent e))                              \
  X(cuEventSynchronize, "cuEventSynchronize", (cp_cuevent e))                  \
  X(cuEventDestroy, "cuEventDestroy_v2", (cp_cuevent e))                       \
  X(cuStreamIsCapturing, "cuStreamIsCapturing", (cp_custream s, int *status))  \
  X(cuEventElapsedTime, "cuEventElapsedTime",                                  \
    (float *ms, cp_cuevent start, cp_cuevent end))                             \
  X(cuModuleLoadData, "cuModuleLoadData",                                     \
    (cp_cumodule * m, const void *image))                                      \
  X(cuModuleGetFunction, "cuModuleGetFunction",                               \
    (cp_cufunction * f, cp_cumodule m, const char *name))                      \
  X(cuLaunchKernel, "cuLaunchKernel",                                          \
    (cp_cufunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,      \
     unsigned by, unsigned bz, unsigned shared, cp_custream s, void **params,  \
     void **extra))                                                            \
  X(cuGetErrorString, "cuGetErrorString", (cp_curesult r, const char **s))   \
  X(cuDriverGetVersion, "cuDriverGetVersion", (int *version))                 \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                       \
  X(cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState",                 \
    (cp_cudevice dev, unsigned *flags, int *active))                           \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                     \
    (cp_cucontext * ctx, cp_cudevice dev))                                     \
  X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2",          \
    (cp_cudevice dev))                                                         \
  X(cuCtxSynchronize, "cuCtxSynchronize", (void))

typedef struct cp_cudadrv {
#define CP_X_FIELD(name, sym, params) cp_curesult(*name) params;
  CP_CUDADRV_LIST(CP_X_FIELD)
#undef CP_X_FIELD
} cp_cudadrv;

/* Device attributes used by cproton (CUdevice_attribute values). */
enum {
  CP_CU_ATTR_CLOCK_RATE = 13,
  CP_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CP_CU_ATTR_MEMORY_CLOCK_RATE = 36,
  CP_CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
  CP_CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CP_CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76
};

/* The table, loading libcuda.so.1 and calling cuInit(0) on first use.
 * Errors: ENODEVICE (no driver here, the message says what dlopen
 * reported; or cuInit failed). Thread-safe. */
int cp_cudadrv_get(const cp_cudadrv **out);

/* The same table without cuInit (the CUPTI loader: its injection entry
 * point runs inside the application's cuInit). Errors: ENODEVICE. */
int cp_cudadrv_load(const cp_cudadrv **out);

/* Resolves every entry point of `lib` into `out` (what the two above do
 * once for libcuda.so.1; tests name a missing library). Errors: ENODEVICE
 * "cannot load <lib>: <dlerror>" or "<lib> lacks <symbol>". */
int cp_cudadrv_open(const char *lib, cp_cudadrv *out);

/* Both GPU backends' probe: whether libcuda.so.1 loads, cuInit succeeds
 * and how many devices it reports (runs: at least one). Loads only the
 * driver; silent; never fails. */
void cp_cudadrv_probe(cp_backend_probe *out);

/* Translates a driver failure into EBACKEND with "<what>: <driver text>". */
int cp_cudadrv_error(cp_curesult r, const char *what);

/* Describes device `dev` (arch, SMs, clocks, bus) into `out`, as a CUDA
 * device with id `dev`. Errors: ENODEVICE. Used by both GPU backends. */
int cp_cudadrv_describe(cp_cudevice dev, cp_device_info *out);

/* Describes `dev` and registers it with core/device.c, once per device
 * (later calls return at once). Errors: those of cp_cudadrv_describe. */
int cp_cudadrv_register_device(cp_cudevice dev);

#endif
