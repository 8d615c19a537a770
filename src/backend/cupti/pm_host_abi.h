/* backend/cupti/pm_host_abi.h -- the part of CUPTI's profiler host API
 * (cuptiProfilerHost*) that the PM-sampling mode calls, declared for C.
 *
 * Why this file exists: CUDA's cupti_profiler_host.h includes <string> and
 * so compiles only as C++. The host API itself is plain C (extern "C",
 * parameter structs of pointers, sizes and enums); these declarations give
 * the same layout field by field, in the header's order, and carry the
 * same struct sizes CUPTI checks (offset of the last field + its size).
 * Only what cproton calls is here. The functions are dlsym'd (loader.c),
 * never linked. */
#ifndef CP_BACKEND_CUPTI_PM_HOST_ABI_H
#define CP_BACKEND_CUPTI_PM_HOST_ABI_H

#include <cupti_result.h>
#include <stddef.h>
#include <stdint.h>

#define CP_PM_STRUCT_SIZE(type_, last_)                                        \
  (offsetof(type_, last_) + sizeof(((type_ *)0)->last_))

typedef enum cp_pm_metric_type {
  CP_PM_METRIC_COUNTER = 0,
  CP_PM_METRIC_RATIO = 1,
  CP_PM_METRIC_THROUGHPUT = 2
} cp_pm_metric_type;

/* CUpti_ProfilerType */
enum { CP_PM_PROFILER_RANGE = 0, CP_PM_PROFILER_PM_SAMPLING = 1 };

typedef struct cp_pm_host_object cp_pm_host_object;

typedef struct cp_pm_host_init_params {
  size_t structSize;
  void *pPriv;
  int profilerType; /* CUpti_ProfilerType (an int-sized enum) */
  const char *pChipName;
  const uint8_t *pCounterAvailabilityImage;
  cp_pm_host_object *pHostObject; /* out */
} cp_pm_host_init_params;

typedef struct cp_pm_host_deinit_params {
  size_t structSize;
  void *pPriv;
  cp_pm_host_object *pHostObject;
} cp_pm_host_deinit_params;

typedef struct cp_pm_host_base_metrics_params {
  size_t structSize;
  void *pPriv;
  cp_pm_host_object *pHostObject;
  int metricType; /* cp_pm_metric_type */
  const char **ppMetricNames; /* out */
  size_t numMetrics;          /* out */
} cp_pm_host_base_metrics_params;

typedef struct cp_pm_host_add_metrics_params {
  size_t structSize;
  void *pPriv;
  cp_pm_host_object *pHostObject;
  const char **ppMetricNames;
  size_t numMetrics;
} cp_pm_host_add_metrics_params;

typedef struct cp_pm_host_image_size_params {
  size_t structSize;
  void *pPriv;
  cp_pm_host_object *pHostObject;
  size_t configImageSize; /* out */
} cp_pm_host_image_size_params;

typedef struct cp_pm_host_image_params {
  size_t structSize;
  void *pPriv;
  cp_pm_host_object *pHostObject;
  size_t configImageSize;
  uint8_t *pConfigImage; /* out */
} cp_pm_host_image_params;

typedef struct cp_pm_host_passes_params {
  size_t structSize;
  void *pPriv;
  size_t configImageSize;
  uint8_t *pConfigImage;
  size_t numOfPasses; /* out */
} cp_pm_host_passes_params;

typedef struct cp_pm_host_evaluate_params {
  size_t structSize;
  void *pPriv;
  cp_pm_host_object *pHostObject;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t rangeIndex; /* a PM-sampling sample's index */
  const char **ppMetricNames;
  size_t numMetrics;
  double *pMetricValues; /* out, numMetrics of them */
} cp_pm_host_evaluate_params;

#define CP_PM_HOST_FUNCS(X)                                                    \
  X(cuptiProfilerHostInitialize, cp_pm_host_init_params)                       \
  X(cuptiProfilerHostDeinitialize, cp_pm_host_deinit_params)                   \
  X(cuptiProfilerHostGetBaseMetrics, cp_pm_host_base_metrics_params)           \
  X(cuptiProfilerHostConfigAddMetrics, cp_pm_host_add_metrics_params)          \
  X(cuptiProfilerHostGetConfigImageSize, cp_pm_host_image_size_params)         \
  X(cuptiProfilerHostGetConfigImage, cp_pm_host_image_params)                  \
  X(cuptiProfilerHostGetNumOfPasses, cp_pm_host_passes_params)                 \
  X(cuptiProfilerHostEvaluateToGpuValues, cp_pm_host_evaluate_params)

/* Prototypes with these structs (the loader dlsym's them by name). */
#define CP_PM_HOST_PROTO(f, t) CUptiResult f(t *p);
CP_PM_HOST_FUNCS(CP_PM_HOST_PROTO)
#undef CP_PM_HOST_PROTO

#endif
