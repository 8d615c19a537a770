// pm_host_abi_check.cpp -- pm_host_abi.h's C declarations of CUPTI's
// profiler host parameter structs against CUDA's own C++-only
// cupti_profiler_host.h: same offset of every field, same struct size
// CUPTI checks (offset of the last field + its size). A compile-time
// test: building this file is the check; running it prints one line.
#include <cstddef>
#include <cstdio>

#include <cupti_profiler_host.h>

extern "C" {
#include "backend/cupti/pm_host_abi.h"
}

#define SAME(ours, theirs, field)                                              \
  static_assert(offsetof(ours, field) == offsetof(theirs, field),             \
                #ours "." #field)
#define SAME_SIZE(ours, theirs, last)                                          \
  static_assert(CP_PM_STRUCT_SIZE(ours, last) ==                               \
                    theirs##_STRUCT_SIZE,                                      \
                #ours " size")

SAME(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pPriv);
SAME(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, profilerType);
SAME(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pChipName);
SAME(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pCounterAvailabilityImage);
SAME(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pHostObject);
SAME_SIZE(cp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params, pHostObject);
SAME(cp_pm_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
SAME_SIZE(cp_pm_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
SAME(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, pHostObject);
SAME(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, metricType);
SAME(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, ppMetricNames);
SAME(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, numMetrics);
SAME_SIZE(cp_pm_host_base_metrics_params, CUpti_Profiler_Host_GetBaseMetrics_Params, numMetrics);
SAME(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject);
SAME(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames);
SAME(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
SAME_SIZE(cp_pm_host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
SAME(cp_pm_host_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params, pHostObject);
SAME(cp_pm_host_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
SAME_SIZE(cp_pm_host_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
SAME(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pHostObject);
SAME(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, configImageSize);
SAME(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
SAME_SIZE(cp_pm_host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
SAME(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, configImageSize);
SAME(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage);
SAME(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
SAME_SIZE(cp_pm_host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
SAME(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject);
SAME(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage);
SAME(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, counterDataImageSize);
SAME(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex);
SAME(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames);
SAME(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics);
SAME(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
SAME_SIZE(cp_pm_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
static_assert((int)CP_PM_PROFILER_RANGE == (int)CUPTI_PROFILER_TYPE_RANGE_PROFILER, "profiler type");
static_assert((int)CP_PM_PROFILER_PM_SAMPLING == (int)CUPTI_PROFILER_TYPE_PM_SAMPLING, "profiler type");
static_assert(sizeof(CUpti_ProfilerType) == sizeof(int), "enum size");

int main() {
  std::puts("pm_host_abi.h: every field at CUDA's offset, every size equal");
  return 0;
}
