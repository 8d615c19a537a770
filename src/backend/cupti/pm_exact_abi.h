/* backend/cupti/pm_exact_abi.h -- layout checks of the profiler host
 * parameter structs that pm_exact.c passes to CUPTI (declared for C in
 * pm_host_abi.h, because cupti_profiler_host.h includes <string> and
 * compiles only as C++).
 *
 * Why: CUPTI reads these structs by offset and checks `structSize`; a
 * field out of place would be read as another silently. The offsets
 * below are derived by hand from cupti_profiler_host.h (CUDA 13.0) for
 * LP64 (size_t and pointers 8 bytes, an enum 4 bytes padded to 8 before a
 * pointer); tests/tools/pm_host_abi_check.cpp compares every field with
 * CUDA's own header where a C++ compiler is present. */
#ifndef CP_BACKEND_CUPTI_PM_EXACT_ABI_H
#define CP_BACKEND_CUPTI_PM_EXACT_ABI_H

#include <stddef.h>

#include "backend/cupti/pm_host_abi.h"

#define CP_PMX_AT(type, field, off)                                            \
  _Static_assert(offsetof(type, field) == (off), #type "." #field)
#define CP_PMX_SIZE(type, last, size)                                          \
  _Static_assert(CP_PM_STRUCT_SIZE(type, last) == (size), #type " size")

_Static_assert(sizeof(size_t) == 8 && sizeof(void *) == 8, "LP64 only");

/* CUpti_Profiler_Host_Initialize_Params */
CP_PMX_AT(cp_pm_host_init_params, profilerType, 16);
CP_PMX_AT(cp_pm_host_init_params, pChipName, 24);
CP_PMX_AT(cp_pm_host_init_params, pCounterAvailabilityImage, 32);
CP_PMX_AT(cp_pm_host_init_params, pHostObject, 40);
CP_PMX_SIZE(cp_pm_host_init_params, pHostObject, 48);
/* CUpti_Profiler_Host_Deinitialize_Params */
CP_PMX_AT(cp_pm_host_deinit_params, pHostObject, 16);
CP_PMX_SIZE(cp_pm_host_deinit_params, pHostObject, 24);
/* CUpti_Profiler_Host_ConfigAddMetrics_Params */
CP_PMX_AT(cp_pm_host_add_metrics_params, pHostObject, 16);
CP_PMX_AT(cp_pm_host_add_metrics_params, ppMetricNames, 24);
CP_PMX_AT(cp_pm_host_add_metrics_params, numMetrics, 32);
CP_PMX_SIZE(cp_pm_host_add_metrics_params, numMetrics, 40);
/* CUpti_Profiler_Host_GetConfigImageSize_Params */
CP_PMX_AT(cp_pm_host_image_size_params, configImageSize, 24);
CP_PMX_SIZE(cp_pm_host_image_size_params, configImageSize, 32);
/* CUpti_Profiler_Host_GetConfigImage_Params */
CP_PMX_AT(cp_pm_host_image_params, configImageSize, 24);
CP_PMX_AT(cp_pm_host_image_params, pConfigImage, 32);
CP_PMX_SIZE(cp_pm_host_image_params, pConfigImage, 40);
/* CUpti_Profiler_Host_GetNumOfPasses_Params */
CP_PMX_AT(cp_pm_host_passes_params, configImageSize, 16);
CP_PMX_AT(cp_pm_host_passes_params, pConfigImage, 24);
CP_PMX_AT(cp_pm_host_passes_params, numOfPasses, 32);
CP_PMX_SIZE(cp_pm_host_passes_params, numOfPasses, 40);
/* CUpti_Profiler_Host_EvaluateToGpuValues_Params */
CP_PMX_AT(cp_pm_host_evaluate_params, pCounterDataImage, 24);
CP_PMX_AT(cp_pm_host_evaluate_params, counterDataImageSize, 32);
CP_PMX_AT(cp_pm_host_evaluate_params, rangeIndex, 40);
CP_PMX_AT(cp_pm_host_evaluate_params, ppMetricNames, 48);
CP_PMX_AT(cp_pm_host_evaluate_params, numMetrics, 56);
CP_PMX_AT(cp_pm_host_evaluate_params, pMetricValues, 64);
CP_PMX_SIZE(cp_pm_host_evaluate_params, pMetricValues, 72);

#undef CP_PMX_AT
#undef CP_PMX_SIZE

#endif
