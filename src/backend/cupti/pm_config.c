/* backend/cupti/pm_config.c -- configuration of the PM-sampling mode
 * through the profiler host API (pm_config.h). Invariant: every host
 * object made here is freed here unless handed to the caller. Not a hot
 * path: session start, on the decoder thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pm_config.h"
#include "backend/cupti/pm_mode.h"

#define PARAMS(type, var, last) type var = {.structSize = CP_PM_STRUCT_SIZE(type, last)}

CUptiResult cp_pm_host_new(const cp_loader_api *api, int profiler_type,
                           const char *chip, const uint8_t *avail,
                           cp_pm_host_object **out) {
  PARAMS(cp_pm_host_init_params, p, pHostObject);
  p.profilerType = profiler_type;
  p.pChipName = chip;
  p.pCounterAvailabilityImage = avail;
  CUptiResult r = api->cuptiProfilerHostInitialize(&p);
  *out = r ? NULL : p.pHostObject;
  return r;
}

void cp_pm_host_free(const cp_loader_api *api, cp_pm_host_object *h) {
  PARAMS(cp_pm_host_deinit_params, p, pHostObject);
  p.pHostObject = h;
  if (h)
    api->cuptiProfilerHostDeinitialize(&p);
}

CUptiResult cp_pm_host_add_metrics(const cp_loader_api *api,
                                   cp_pm_host_object *h, const char **names,
                                   size_t n) {
  PARAMS(cp_pm_host_add_metrics_params, a, numMetrics);
  a.pHostObject = h;
  a.ppMetricNames = names;
  a.numMetrics = n;
  return api->cuptiProfilerHostConfigAddMetrics(&a);
}

/* The config image of names[0..n) in a fresh host object; *passes set.
 * NULL (and *bad the CUPTI result) when CUPTI refuses a name. The host
 * object is freed, or handed to *keep (it evaluates samples later). */
uint8_t *cp_pm_config_image(const cp_loader_api *api, const char *chip,
                            const uint8_t *avail,
                      const char **names, size_t n, size_t *size,
                      size_t *passes, CUptiResult *bad,
                      cp_pm_host_object **keep) {
  cp_pm_host_object *h;
  uint8_t *img = NULL;
  PARAMS(cp_pm_host_image_size_params, s, configImageSize);
  *bad = cp_pm_host_new(api, CP_PM_PROFILER_PM_SAMPLING, chip, avail, &h);
  if (!*bad)
    *bad = cp_pm_host_add_metrics(api, h, names, n);
  s.pHostObject = h;
  if (!*bad && !(*bad = api->cuptiProfilerHostGetConfigImageSize(&s)) &&
      (img = calloc(1, s.configImageSize))) {
    PARAMS(cp_pm_host_image_params, g, pConfigImage);
    PARAMS(cp_pm_host_passes_params, q, numOfPasses);
    g.pHostObject = h;
    g.configImageSize = q.configImageSize = *size = s.configImageSize;
    g.pConfigImage = q.pConfigImage = img;
    if ((*bad = api->cuptiProfilerHostGetConfigImage(&g)) ||
        (*bad = api->cuptiProfilerHostGetNumOfPasses(&q)))
      free(img), img = NULL;
    *passes = q.numOfPasses;
  }
  if (keep && img)
    *keep = h;
  else
    cp_pm_host_free(api, h);
  return img;
}

/* Keeps, in order, the counters that CUPTI knows and that fit one pass
 * with those kept before them; names the first refused one in `why`.
 * Returns how many were dropped. */
size_t cp_pm_config_fit(const cp_loader_api *api, const char *chip,
                        const uint8_t *avail, const char **cupti,
                        const char **names, size_t *n, char *why,
                        size_t whysize) {
  size_t kept = 0, dropped = 0;
  why[0] = '\0';
  for (size_t i = 0; i < *n; i++) {
    size_t size = 0, passes = 0;
    CUptiResult bad;
    const char *try[CP_PM_MAX_METRICS];
    memcpy(try, cupti, kept * sizeof *try);
    try[kept] = cupti[i];
    uint8_t *img =
        cp_pm_config_image(api, chip, avail, try, kept + 1, &size, &passes,
                           &bad, NULL);
    free(img);
    if (img && passes == 1) {
      cupti[kept] = cupti[i], names[kept++] = names[i];
      continue;
    }
    if (!dropped++)
      snprintf(why, whysize, img ? "'%s' (%s) needs a second pass beside "
               "the counters before it" : "'%s' (%s) is not a PM-sampling "
               "counter on %s (%s)", names[i], cupti[i], chip,
               img ? "" : cp_loader_cupti_error(api, bad));
  }
  *n = kept;
  return dropped;
}

uint8_t *cp_pm_availability(const cp_loader_api *api, size_t dev) {
  PARAMS(CUpti_PmSampling_GetCounterAvailability_Params, p,
         pCounterAvailabilityImage);
  p.deviceIndex = dev;
  if (api->cuptiPmSamplingGetCounterAvailability(&p))
    return NULL;
  uint8_t *img = calloc(1, p.counterAvailabilityImageSize + 1);
  p.pCounterAvailabilityImage = img;
  if (img && api->cuptiPmSamplingGetCounterAvailability(&p))
    free(img), img = NULL;
  return img;
}

