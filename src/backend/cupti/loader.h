/* backend/cupti/loader.h -- libcuda and libcupti, opened with dlopen and
 * reached through one table of dlsym'd pointers (cp_loader_*). The CUDA
 * headers are used for types and prototypes only; nothing links against
 * the vendor libraries, so cproton loads on machines without a driver. */
#ifndef CP_BACKEND_CUPTI_LOADER_H
#define CP_BACKEND_CUPTI_LOADER_H

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <limits.h>

#include "backend/cupti/config.h"
#include "backend/cupti/pm_host_abi.h"

/* X(function, field of cp_cudadrv) for every driver function the CUPTI
 * backend calls: copied from the one driver table (backend/cudadrv.h,
 * which dlsyms the _v2 symbols). Then X(function) for every CUPTI
 * function, dlsym'd as written. */
#define CP_LOADER_CUDA_FUNCS(X)                                                \
  X(cuInit, cuInit)                                                            \
  X(cuDriverGetVersion, cuDriverGetVersion)                                    \
  X(cuDeviceGet, cuDeviceGet)                                                  \
  X(cuDeviceGetCount, cuDeviceGetCount)                                        \
  X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState)                    \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)                        \
  X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease_v2)                \
  X(cuCtxGetCurrent, cuCtxGetCurrent)                                          \
  X(cuCtxSetCurrent, cuCtxSetCurrent)                                          \
  X(cuCtxSynchronize, cuCtxSynchronize)

#define CP_LOADER_CUPTI_FUNCS(X)                                               \
  X(cuptiGetVersion)                                                           \
  X(cuptiGetResultString)                                                      \
  X(cuptiSubscribe)                                                            \
  X(cuptiUnsubscribe)                                                          \
  X(cuptiEnableCallback)                                                       \
  X(cuptiEnableDomain)                                                         \
  X(cuptiActivityEnable)                                                       \
  X(cuptiActivityDisable)                                                      \
  X(cuptiActivityRegisterCallbacks)                                            \
  X(cuptiActivityGetNextRecord)                                                \
  X(cuptiActivityGetNumDroppedRecords)                                         \
  X(cuptiActivityFlushAll)                                                     \
  X(cuptiGetGraphNodeId)

/* Resolved when present (NULL otherwise): newer than the oldest CUPTI we
 * accept. */
#define CP_LOADER_CUPTI_OPTIONAL(X)                                            \
  X(cuptiActivityRegisterTimestampCallback)                                    \
  X(cuptiPCSamplingSetConfigurationAttribute)                                  \
  X(cuptiPCSamplingEnable)                                                     \
  X(cuptiPCSamplingDisable)                                                    \
  X(cuptiPCSamplingStart)                                                      \
  X(cuptiPCSamplingStop)                                                       \
  X(cuptiPCSamplingGetData)                                                    \
  X(cuptiPCSamplingGetNumStallReasons)                                         \
  X(cuptiPCSamplingGetStallReasons)                                            \
  X(cuptiGetSassToSourceCorrelation)                                           \
  X(cuptiGetCubinCrc)

/* Resolved when present (NULL otherwise): the range profiler behind
 * `pmsampling:exact` (pm_exact_ctx.c; CUPTI 12.6 and later) and the
 * profiler target calls it needs first (device, counter availability). */
#define CP_LOADER_CUPTI_RANGE(X)                                               \
  X(cuptiGetDeviceId)                                                          \
  X(cuptiProfilerDeInitialize)                                                 \
  X(cuptiProfilerGetCounterAvailability)                                       \
  X(cuptiRangeProfilerEnable)                                                  \
  X(cuptiRangeProfilerDisable)                                                 \
  X(cuptiRangeProfilerSetConfig)                                               \
  X(cuptiRangeProfilerStart)                                                   \
  X(cuptiRangeProfilerStop)                                                    \
  X(cuptiRangeProfilerDecodeData)                                              \
  X(cuptiRangeProfilerGetCounterDataSize)                                      \
  X(cuptiRangeProfilerCounterDataImageInitialize)                              \
  X(cuptiRangeProfilerGetCounterDataInfo)                                      \
  X(cuptiRangeProfilerCounterDataGetRangeInfo)

/* PM sampling (CUDA 12.6+; pmsampling mode, pm_sampler.c): resolved when
 * present; the mode warns and stays off when any is missing. */
#define CP_LOADER_CUPTI_PM(X)                                                  \
  X(cuptiProfilerInitialize)                                                   \
  X(cuptiDeviceGetChipName)                                                    \
  X(cuptiPmSamplingGetCounterAvailability)                                     \
  X(cuptiPmSamplingEnable)                                                     \
  X(cuptiPmSamplingDisable)                                                    \
  X(cuptiPmSamplingSetConfig)                                                  \
  X(cuptiPmSamplingStart)                                                      \
  X(cuptiPmSamplingStop)                                                       \
  X(cuptiPmSamplingDecodeData)                                                 \
  X(cuptiPmSamplingGetCounterDataSize)                                         \
  X(cuptiPmSamplingCounterDataImageInitialize)                                 \
  X(cuptiPmSamplingGetCounterDataInfo)                                         \
  X(cuptiPmSamplingCounterDataGetSampleInfo)                                   \
  X(cuptiProfilerHostInitialize)                                               \
  X(cuptiProfilerHostDeinitialize)                                             \
  X(cuptiProfilerHostGetBaseMetrics)                                           \
  X(cuptiProfilerHostConfigAddMetrics)                                         \
  X(cuptiProfilerHostGetConfigImageSize)                                       \
  X(cuptiProfilerHostGetConfigImage)                                           \
  X(cuptiProfilerHostGetNumOfPasses)                                           \
  X(cuptiProfilerHostEvaluateToGpuValues)

typedef struct cp_loader_api {
  void *cupti_handle;
  char cupti_path[PATH_MAX]; /* the file that loaded */
#define CP_LOADER_CUDA_MEMBER(f, field) __typeof__(&f) f;
  CP_LOADER_CUDA_FUNCS(CP_LOADER_CUDA_MEMBER)
#undef CP_LOADER_CUDA_MEMBER
#define CP_LOADER_MEMBER(f) __typeof__(&f) f;
  CP_LOADER_CUPTI_FUNCS(CP_LOADER_MEMBER)
  CP_LOADER_CUPTI_OPTIONAL(CP_LOADER_MEMBER)
  CP_LOADER_CUPTI_PM(CP_LOADER_MEMBER)
  CP_LOADER_CUPTI_RANGE(CP_LOADER_MEMBER)
#undef CP_LOADER_MEMBER
} cp_loader_api;

/* Takes the driver from the one driver table and opens CUPTI along `c`'s
 * search order and resolves every
 * function into `api`. Errors: ENODEVICE when libcuda.so.1 does not load
 * (no NVIDIA driver), EBACKEND when no CUPTI loads or a symbol is missing;
 * the message lists what was tried. Handles are never closed (CUDA keeps
 * calling into CUPTI until process exit). Not a hot path. */
int cp_loader_open(const cp_cupti_config *c, cp_loader_api *api);

/* "CUPTI_ERROR_..." text for `r` (or a number when CUPTI is not loaded). */
const char *cp_loader_cupti_error(const cp_loader_api *api, CUptiResult r);

#endif
