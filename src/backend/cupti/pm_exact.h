/* backend/cupti/pm_exact.h -- `pmsampling:exact` (cp_pm_exact_*): per-kernel
 * hardware counter values from CUPTI's range profiler, one auto range per
 * kernel launch, kernels replayed by CUPTI when the counters need more than
 * one pass (docs/hardware-metrics.md, "Exact mode").
 *
 * Life cycle, on application threads (the session's start, flush and
 * stop; the launch hook on launching threads):
 *
 *   cp_pm_exact_options o; cp_pm_exact_options_init(&o);  o.ranges = N;
 *   cp_pm_exact_start(api, state, metrics, n, &o);  installs the launch hook
 *   ...kernels...            each context's image decoded when N launches
 *                            are waiting, before the next launch
 *   cp_pm_exact_flush();     after the kernel records were flushed
 *   cp_pm_exact_stop();      decodes the rest, reports what was dropped
 *
 * The mode owns state->hooks.launch_bracket while on, so it cannot run
 * beside `pcsampling:exact` (start refuses), and it needs every launch's
 * callback (lazy callbacks off). */
#ifndef CP_BACKEND_CUPTI_PM_EXACT_H
#define CP_BACKEND_CUPTI_PM_EXACT_H

#include <stddef.h>

#include "backend/cupti/loader.h"
#include "backend/cupti/pm_exact_map.h"
#include "backend/cupti/pm_metrics.h"
#include "backend/cupti/state.h"

/* Ranges one counter data image holds per context unless told (`:ranges=N`
 * in the mode string, parsed by the mode's parser). */
#define CP_PM_EXACT_RANGES 1024
#define CP_PM_EXACT_MAX_RANGES (1u << 20)

typedef struct cp_pm_exact_options {
  size_t ranges; /* launches per decode, 1..CP_PM_EXACT_MAX_RANGES */
} cp_pm_exact_options;

void cp_pm_exact_options_init(cp_pm_exact_options *o);

/* Starts the mode for `metrics` (n of them, as cp_pm_metrics_resolve
 * gives them: the stored name and the Perfworks name; both are copied). Contexts whose primary context is active are
 * set up now, later ones at their first launch.
 * Returns CPROTON_OK, also when this CUPTI has no range profiler (one
 * warning; kernels are still profiled). Errors: EINVAL (no metric, bad
 * option), ESTATE (already on, or another mode holds the launch hook),
 * EBACKEND when CUPTI refuses the counters on an existing context, with
 * a message that says why: another tool or the driver holds the GPU's
 * performance counters, or (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) the
 * driver restricts them to administrators
 * (NVreg_RestrictProfilingToAdminUsers);
 * an unknown counter names the counter. Not thread-safe against itself. */
int cp_pm_exact_start(const cp_loader_api *api, cp_cupti_state *state,
                      const cp_pm_metric *metrics, size_t n,
                      const cp_pm_exact_options *opt);

/* Decodes every context's image and delivers its ranges. Call after the
 * kernel records were flushed. Returns CPROTON_OK, or EBACKEND when a
 * context's decode failed (its ranges counted as dropped). */
int cp_pm_exact_flush(void);

/* Decodes the rest, disables the range profiler, frees everything and
 * reports the counts once (a warning when anything was dropped). Safe to
 * call when not started. */
void cp_pm_exact_stop(void);

/* The counts since start (for tests and reports). */
void cp_pm_exact_counts_get(cp_pm_exact_counts *out);

#endif
