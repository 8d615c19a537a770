/* pm_host_abi_fields.h -- the fields of CUPTI's profiler host parameter
 * structs that src/backend/cupti/pm_host_abi.h declares for C, as one
 * list X(our type, CUDA's type, field) and the last fields that give each
 * struct's size S(our type, CUDA's type, last field). Read by both halves
 * of the check: pm_host_abi_ours.c (C, our header) and
 * pm_host_abi_check.cpp (C++, CUDA's cupti_profiler_host.h, which cannot
 * be in one translation unit with our prototypes). */
#define PM_HOST_ABI_FIELDS(X)                                                  \
  X(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pPriv)      \
  X(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, profilerType) \
  X(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pChipName)  \
  X(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pCounterAvailabilityImage) \
  X(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pHostObject) \
  X(cp_pm_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params, pHostObject) \
  X(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, pHostObject) \
  X(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, metricType) \
  X(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, ppMetricNames) \
  X(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, numMetrics) \
  X(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject) \
  X(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames) \
  X(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics) \
  X(cp_pm_host_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params, pHostObject) \
  X(cp_pm_host_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize) \
  X(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pHostObject) \
  X(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, configImageSize) \
  X(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage) \
  X(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, configImageSize) \
  X(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage) \
  X(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses) \
  X(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject) \
  X(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage) \
  X(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, counterDataImageSize) \
  X(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex) \
  X(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames) \
  X(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics) \
  X(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues)

#define PM_HOST_ABI_SIZES(S)                                                   \
  S(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pHostObject) \
  S(cp_pm_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params, pHostObject) \
  S(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, numMetrics) \
  S(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics) \
  S(cp_pm_host_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize) \
  S(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage) \
  S(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses) \
  S(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues)

/* Both halves fill one of these: every field's offset, then every size,
 * then the two profiler-type values, in list order. */
#define PM_HOST_ABI_N 38
