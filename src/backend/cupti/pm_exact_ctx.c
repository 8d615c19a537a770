/* backend/cupti/pm_exact_ctx.c -- one context under CUPTI's range
 * profiler (pm_exact_ctx.h). The calls, in order (CUPTI 12.6+):
 *   setup   cuptiGetDeviceId, cuptiDeviceGetChipName,
 *           cuptiProfilerGetCounterAvailability (size, then image),
 *           cuptiProfilerHostInitialize (range profiler, chip, availability),
 *           ...HostConfigAddMetrics, ...GetConfigImageSize, ...GetConfigImage,
 *           ...GetNumOfPasses, cuptiRangeProfilerEnable,
 *           cuptiRangeProfilerGetCounterDataSize (ranges), then arm
 *   arm     cuptiRangeProfilerCounterDataImageInitialize,
 *           cuptiRangeProfilerSetConfig (CUPTI_AutoRange, CUPTI_KernelReplay,
 *           one nesting level, `ranges` per pass), cuptiRangeProfilerStart
 *   decode  cuCtxSynchronize, cuptiRangeProfilerStop, ...DecodeData (its
 *           dropped ranges counted), ...GetCounterDataInfo, then per range
 *           cuptiProfilerHostEvaluateToGpuValues, through pm_exact_map.c
 * Invariant: a context is either fully set up and armed (ok) or freed.
 * Not a hot path (a decode runs every `ranges` launches). Called by
 * pm_exact.c. */
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pm_config.h"
#include "backend/cupti/pm_exact_abi.h"
#include "backend/cupti/pm_exact_ctx.h"
#include "core/error.h"
#include "core/log.h"
#include "cproton/cproton.h"

#define HELD                                                                   \
  "another tool or the driver holds the GPU's performance counters "          \
  "(Nsight Compute or Systems, DCGM, another profiler in this process)"

/* CUPTI's refusals as data: why, and whether to refuse the session. */
static const struct {
  CUptiResult r;
  int refuse;
  const char *why;
} reasons[] = {
    {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, 1,
     "the driver restricts the GPU's performance counters to administrators "
     "(NVreg_RestrictProfilingToAdminUsers=1): run as root, or load the "
     "nvidia module with NVreg_RestrictProfilingToAdminUsers=0"},
    {CUPTI_ERROR_HARDWARE_BUSY, 1, HELD},
    {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, 1, HELD},
    {CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, 1, HELD},
    {CUPTI_ERROR_NOT_SUPPORTED, 0, "this GPU or driver has no range profiler"},
    {CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, 0,
     "a virtual GPU gives no performance counters"},
    {CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED, 0,
     "a CMP device gives no performance counters"},
};

const char *cp_pm_exact_ctx_why(CUptiResult r, int *refuse_out) {
  *refuse_out = 1;
  for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
    if (reasons[i].r == r) {
      *refuse_out = reasons[i].refuse;
      return reasons[i].why;
    }
  return NULL;
}

/* The class of the last refusal (cp_pm_exact_ctx_why), for x->refuse. */
static int last_refuse;

static int fail(const cp_loader_api *api, const char *call, CUptiResult r) {
  const char *why = cp_pm_exact_ctx_why(r, &last_refuse);
  return cp_error_set(CPROTON_EBACKEND, "pmsampling:exact: %s failed: %s%s%s",
                      call, cp_loader_cupti_error(api, r), why ? ": " : "",
                      why ? why : "");
}

#define CALL(fn, p)                                                            \
  do {                                                                         \
    CUptiResult r_ = api->fn(&(p));                                            \
    if (r_ != CUPTI_SUCCESS)                                                   \
      return fail(api, #fn, r_);                                               \
  } while (0)

/* The chip's name and the context's counter availability image (malloc'd
 * into *avail). */
static int chip_of(const cp_loader_api *api, CUcontext ctx, const char **chip,
                   uint8_t **avail) {
  uint32_t dev = 0;
  CUptiResult r = api->cuptiGetDeviceId(ctx, &dev);
  if (r != CUPTI_SUCCESS)
    return fail(api, "cuptiGetDeviceId", r);
  CUpti_Device_GetChipName_Params cp = {
      .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
      .deviceIndex = dev};
  CALL(cuptiDeviceGetChipName, cp);
  *chip = cp.pChipName;
  CUpti_Profiler_GetCounterAvailability_Params ap = {
      .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
      .ctx = ctx};
  CALL(cuptiProfilerGetCounterAvailability, ap);
  size_t size = ap.counterAvailabilityImageSize;
  if (!(*avail = malloc(size ? size : 1)))
    return cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory");
  ap.pCounterAvailabilityImage = *avail;
  CALL(cuptiProfilerGetCounterAvailability, ap);
  return CPROTON_OK;
}

/* A range-profiler host object for the chip (pm_config.c), or an error. */
static int host_new(const cp_loader_api *api, const char *chip,
                    const uint8_t *avail, cp_pm_host_object **out) {
  CUptiResult r = cp_pm_host_new(api, CP_PM_PROFILER_RANGE, chip, avail, out);
  return r ? fail(api, "cuptiProfilerHostInitialize", r) : CPROTON_OK;
}

/* CUPTI refused the list: names the first metric it refuses alone. */
static int name_refused(const cp_loader_api *api, const char *chip,
                        const uint8_t *avail, const cp_pm_exact_setup *s,
                        CUptiResult r) {
  for (size_t i = 0; i < s->n_names; i++) {
    cp_pm_host_object *h = NULL;
    if (host_new(api, chip, avail, &h))
      break;
    CUptiResult ri = cp_pm_host_add_metrics(api, h, &s->names[i], 1);
    cp_pm_host_free(api, h);
    if (ri != CUPTI_SUCCESS)
      return cp_error_set(CPROTON_EBACKEND,
                          "pmsampling:exact: CUPTI has no counter '%s' on "
                          "chip %s (%s)",
                          s->names[i], chip, cp_loader_cupti_error(api, ri));
  }
  return fail(api, "cuptiProfilerHostConfigAddMetrics", r);
}

int cp_pm_exact_ctx_check(const cp_loader_api *api, uint32_t device,
                          const cp_pm_exact_setup *s) {
  CUpti_Device_GetChipName_Params cp = {
      .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
      .deviceIndex = device};
  cp_pm_host_object *h = NULL;
  CUptiResult r = api->cuptiDeviceGetChipName(&cp);
  if (r != CUPTI_SUCCESS || !cp.pChipName) {
    cp_debug("pmsampling:exact: no chip name for device %u (%s): counters "
             "checked at the first context",
             device, cp_loader_cupti_error(api, r));
    return CPROTON_OK;
  }
  int rc = host_new(api, cp.pChipName, NULL, &h);
  if (!rc && (r = cp_pm_host_add_metrics(api, h, s->names, s->n_names)))
    rc = name_refused(api, cp.pChipName, NULL, s, r);
  cp_pm_host_free(api, h);
  return rc;
}

/* The config image of x's host object (metrics added) and its passes. */
static int config_of(const cp_loader_api *api, cp_pm_exact_ctx *x) {
  cp_pm_host_image_size_params sp = {
      .structSize =
          CP_PM_STRUCT_SIZE(cp_pm_host_image_size_params, configImageSize),
      .pHostObject = x->host};
  CALL(cuptiProfilerHostGetConfigImageSize, sp);
  if (!(x->config = malloc(sp.configImageSize ? sp.configImageSize : 1)))
    return cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory");
  x->config_size = sp.configImageSize;
  cp_pm_host_image_params ip = {
      .structSize = CP_PM_STRUCT_SIZE(cp_pm_host_image_params, pConfigImage),
      .pHostObject = x->host, .configImageSize = x->config_size,
      .pConfigImage = x->config};
  CALL(cuptiProfilerHostGetConfigImage, ip);
  cp_pm_host_passes_params pp = {
      .structSize = CP_PM_STRUCT_SIZE(cp_pm_host_passes_params, numOfPasses),
      .configImageSize = x->config_size, .pConfigImage = x->config};
  CALL(cuptiProfilerHostGetNumOfPasses, pp);
  x->passes = pp.numOfPasses;
  return CPROTON_OK;
}

/* Enables the range profiler on x's context and sizes its image. */
static int image_of(const cp_loader_api *api, cp_pm_exact_ctx *x,
                    const cp_pm_exact_setup *s) {
  CUpti_RangeProfiler_Enable_Params ep = {
      .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE,
      .ctx = x->ctx};
  CALL(cuptiRangeProfilerEnable, ep);
  x->obj = ep.pRangeProfilerObject;
  CUpti_RangeProfiler_GetCounterDataSize_Params gp = {
      .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
      .pRangeProfilerObject = x->obj, .pMetricNames = s->names,
      .numMetrics = s->n_names, .maxNumOfRanges = s->ranges,
      .maxNumRangeTreeNodes = (uint32_t)s->ranges};
  CALL(cuptiRangeProfilerGetCounterDataSize, gp);
  if (!(x->image = malloc(gp.counterDataSize ? gp.counterDataSize : 1)))
    return cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory for a "
                                        "%zu-byte counter data image",
                        gp.counterDataSize);
  x->image_size = gp.counterDataSize;
  x->ranges = s->ranges;
  return CPROTON_OK;
}

/* A fresh image, the configuration, Start. */
static int arm(const cp_loader_api *api, cp_pm_exact_ctx *x) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params ip = {
      .structSize =
          CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
      .pRangeProfilerObject = x->obj, .counterDataSize = x->image_size,
      .pCounterData = x->image};
  CALL(cuptiRangeProfilerCounterDataImageInitialize, ip);
  CUpti_RangeProfiler_SetConfig_Params cp = {
      .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE,
      .pRangeProfilerObject = x->obj, .configSize = x->config_size,
      .pConfig = x->config, .counterDataImageSize = x->image_size,
      .pCounterDataImage = x->image, .range = CUPTI_AutoRange,
      .replayMode = CUPTI_KernelReplay, .maxRangesPerPass = x->ranges,
      .numNestingLevels = 1, .minNestingLevel = 1, .passIndex = 0,
      .targetNestingLevel = 1};
  CALL(cuptiRangeProfilerSetConfig, cp);
  CUpti_RangeProfiler_Start_Params sp = {
      .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE,
      .pRangeProfilerObject = x->obj};
  CALL(cuptiRangeProfilerStart, sp);
  x->started = 1;
  return CPROTON_OK;
}

static int setup_steps(const cp_loader_api *api, cp_pm_exact_ctx *x,
                       const cp_pm_exact_setup *s) {
  const char *chip = NULL;
  uint8_t *avail = NULL;
  int rc = chip_of(api, x->ctx, &chip, &avail);
  if (!rc)
    rc = host_new(api, chip, avail, &x->host);
  CUptiResult r = CUPTI_SUCCESS;
  if (!rc && (r = cp_pm_host_add_metrics(api, x->host, s->names, s->n_names)))
    rc = name_refused(api, chip, avail, s, r);
  free(avail);
  if (!rc)
    rc = config_of(api, x);
  if (!rc)
    rc = image_of(api, x, s);
  if (!rc)
    rc = cp_pm_exact_map_queue_init(&x->q, s->ranges);
  if (!rc)
    rc = arm(api, x);
  if (!rc)
    cp_info("pmsampling:exact: context %p on chip %s: %zu metrics in %zu "
            "pass(es), %zu ranges (%zu-byte image)",
            (void *)x->ctx, chip, s->n_names, x->passes, x->ranges,
            x->image_size);
  return rc;
}

int cp_pm_exact_ctx_setup(const cp_loader_api *api, CUcontext ctx,
                          const cp_pm_exact_setup *s, cp_pm_exact_ctx *x) {
  memset(x, 0, sizeof *x);
  x->ctx = ctx;
  last_refuse = 1; /* anything but a known lack of support */
  int rc = setup_steps(api, x, s);
  if (rc) {
    int refuse = last_refuse;
    cp_pm_exact_ctx_free(api, x);
    x->ctx = ctx; /* remembered as refused */
    x->refuse = refuse;
    return rc;
  }
  x->ok = 1;
  return CPROTON_OK;
}

/* ---- decode ------------------------------------------------------------- */

typedef struct reading {
  const cp_loader_api *api;
  const cp_pm_exact_ctx *x;
  const cp_pm_exact_setup *s;
} reading;

static int evaluate(void *u, size_t i, double *values) {
  const reading *rd = u;
  cp_pm_host_evaluate_params p = {
      .structSize =
          CP_PM_STRUCT_SIZE(cp_pm_host_evaluate_params, pMetricValues),
      .pHostObject = rd->x->host, .pCounterDataImage = rd->x->image,
      .counterDataImageSize = rd->x->image_size, .rangeIndex = i,
      .ppMetricNames = rd->s->names, .numMetrics = rd->s->n_names,
      .pMetricValues = values};
  return rd->api->cuptiProfilerHostEvaluateToGpuValues(&p) == CUPTI_SUCCESS
             ? 0
             : CPROTON_EBACKEND;
}

/* Range names are read for the first ranges of the process only, logged
 * (they tell how CUPTI names auto ranges) and checked against the launch's
 * kernel: the mapping is by order (pm_exact_map.h), and whether the
 * caller must free a returned name is not documented (at most
 * NAMED_RANGES of them are kept). */
#define NAMED_RANGES 4
static int n_named;

static const char *range_name(void *u, size_t i) {
  const reading *rd = u;
  if (n_named >= NAMED_RANGES)
    return NULL;
  CUpti_RangeProfiler_CounterData_GetRangeInfo_Params p = {
      .structSize =
          CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE,
      .pCounterDataImage = rd->x->image,
      .counterDataImageSize = rd->x->image_size, .rangeIndex = i,
      .rangeDelimiter = "/"};
  if (rd->api->cuptiRangeProfilerCounterDataGetRangeInfo(&p) != CUPTI_SUCCESS)
    return NULL;
  n_named++;
  cp_info("pmsampling:exact: range %zu of a decode is named '%s'", i,
          p.rangeName ? p.rangeName : "(null)");
  return p.rangeName;
}

static int stop(const cp_loader_api *api, cp_pm_exact_ctx *x) {
  CUpti_RangeProfiler_Stop_Params p = {
      .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE,
      .pRangeProfilerObject = x->obj};
  x->started = 0;
  CALL(cuptiRangeProfilerStop, p);
  return CPROTON_OK;
}

/* DecodeData and the number of ranges the image holds. */
static int decoded(const cp_loader_api *api, cp_pm_exact_ctx *x, size_t *n,
                   cp_pm_exact_counts *c) {
  CUpti_RangeProfiler_DecodeData_Params dp = {
      .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE,
      .pRangeProfilerObject = x->obj};
  CALL(cuptiRangeProfilerDecodeData, dp);
  c->cupti_dropped += dp.numOfRangeDropped;
  CUpti_RangeProfiler_GetCounterDataInfo_Params ip = {
      .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE,
      .pCounterDataImage = x->image, .counterDataImageSize = x->image_size};
  CALL(cuptiRangeProfilerGetCounterDataInfo, ip);
  *n = ip.numTotalRanges;
  return CPROTON_OK;
}

int cp_pm_exact_ctx_decode(const cp_loader_api *api, cp_pm_exact_ctx *x,
                           const cp_pm_exact_setup *s, int graph, int last,
                           cp_pm_exact_counts *c) {
  if (!x->ok)
    return CPROTON_OK;
  api->cuCtxSynchronize(); /* the ranges' kernels have run */
  size_t n = 0;
  int rc = x->started ? stop(api, x) : CPROTON_OK;
  if (!rc)
    rc = decoded(api, x, &n, c);
  if (rc) {
    c->unmeasured += x->q.n;
    x->q.n = 0;
  } else {
    reading rd = {api, x, s};
    cp_pm_exact_ranges r = {n, evaluate, range_name, &rd};
    cp_pm_exact_map_deliver(&x->q, &r, s->stored, graph, c);
  }
  if (!last) {
    int arc = arm(api, x);
    if (arc)
      x->ok = 0; /* not armed: no more ranges from this context */
    rc = rc ? rc : arc;
  }
  return rc;
}

void cp_pm_exact_ctx_free(const cp_loader_api *api, cp_pm_exact_ctx *x) {
  if (x->started) {
    CUpti_RangeProfiler_Stop_Params p = {
        .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE,
        .pRangeProfilerObject = x->obj};
    api->cuptiRangeProfilerStop(&p);
  }
  if (x->obj) {
    CUpti_RangeProfiler_Disable_Params p = {
        .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE,
        .pRangeProfilerObject = x->obj};
    api->cuptiRangeProfilerDisable(&p);
  }
  cp_pm_host_free(api, x->host);
  free(x->config);
  free(x->image);
  cp_pm_exact_map_queue_free(&x->q);
  memset(x, 0, sizeof *x);
}
