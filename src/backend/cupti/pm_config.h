/* backend/cupti/pm_config.h -- the PM-sampling mode's configuration through
 * CUPTI's profiler host API (cp_pm_config_*, cp_pm_host_*): host objects,
 * config images, which counters fit one pass, counter availability.
 * Called on the decoder thread (pm_sampler.c) and, for the host objects, by
 * the exact mode (pm_exact_ctx.c). Not a hot path. */
#ifndef CP_BACKEND_CUPTI_PM_CONFIG_H
#define CP_BACKEND_CUPTI_PM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cupti/loader.h"

/* A host object for `chip` and `profiler_type` (CP_PM_PROFILER_PM_SAMPLING
 * or _RANGE: the exact mode's, pm_exact_ctx.c) in *out; CUPTI's result
 * (*out NULL unless CUPTI_SUCCESS). */
CUptiResult cp_pm_host_new(const cp_loader_api *api, int profiler_type,
                           const char *chip, const uint8_t *avail,
                           cp_pm_host_object **out);

/* Frees `h` (NULL is fine). */
void cp_pm_host_free(const cp_loader_api *api, cp_pm_host_object *h);

/* Schedules names[0..n) on `h`; CUPTI's result (a name it does not know
 * refuses the whole list). */
CUptiResult cp_pm_host_add_metrics(const cp_loader_api *api,
                                   cp_pm_host_object *h, const char **names,
                                   size_t n);

/* The config image of names[0..n) in a fresh host object; *size and
 * *passes set. NULL (and *bad the CUPTI result) when CUPTI refuses a name.
 * The host object is freed, or handed to *keep (it evaluates samples). */
uint8_t *cp_pm_config_image(const cp_loader_api *api, const char *chip,
                            const uint8_t *avail, const char **names, size_t n,
                            size_t *size, size_t *passes, CUptiResult *bad,
                            cp_pm_host_object **keep);

/* Keeps, in order, the counters (cupti[i], stored as names[i]) that CUPTI
 * knows and that fit one pass with those kept before them; *n becomes how
 * many were kept; `why` names the first one left out. Returns how many
 * were left out. */
size_t cp_pm_config_fit(const cp_loader_api *api, const char *chip,
                        const uint8_t *avail, const char **cupti,
                        const char **names, size_t *n, char *why,
                        size_t whysize);

/* Device `dev`'s counter availability image (malloc'ed); NULL when CUPTI
 * has none for it. */
uint8_t *cp_pm_availability(const cp_loader_api *api, size_t dev);

#endif
