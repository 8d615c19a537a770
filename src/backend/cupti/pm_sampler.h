/* backend/cupti/pm_sampler.h -- the vendor side of the PM-sampling mode
 * (cp_pm_sampler_*): CUPTI's PM sampling (cupti_pmsampling.h) on every
 * device, continuous, no kernel replay, with the profiler host API
 * (pm_host_abi.h) building the configuration and evaluating samples.
 *
 * One decoder thread owns every PM-sampling call: it retains each
 * device's primary context (so the application's threads keep theirs),
 * enables and starts sampling, and every few milliseconds decodes the
 * hardware buffer, evaluates the new samples and hands them to
 * pm_attr.c, which settles the kernels whose samples are all in.
 *
 * Failure policy (issue 27): a device or driver without PM sampling
 * (symbols missing, CUPTI_ERROR_NOT_SUPPORTED, MIG, ...) gives one warning
 * and the session goes on with kernel-level profiling; counters held by
 * another tool (CUPTI_ERROR_HARDWARE_BUSY, an already enabled sampler) or
 * missing privileges refuse the start with a message saying so; a user's
 * counter CUPTI does not know, or a set that needs more than one pass, is
 * refused naming the counter (the default set keeps what fits and warns).
 * Not a hot path. */
#ifndef CP_BACKEND_CUPTI_PM_SAMPLER_H
#define CP_BACKEND_CUPTI_PM_SAMPLER_H

#include "backend/cupti/loader.h"
#include "backend/cupti/pm_mode.h"

/* Starts sampling per `o` on every device. Errors (session start
 * refused): EBACKEND for counters held elsewhere or missing privileges,
 * EINVAL for a counter set CUPTI refuses. OK with a warning when PM
 * sampling is not available here. */
int cp_pm_sampler_start(const cp_loader_api *api, const cp_pm_options *o);

/* Decodes what the devices sampled so far and settles the kernels whose
 * records are in (call after the kernel records are flushed). */
int cp_pm_sampler_flush(void);

/* Stops sampling, decodes and settles everything, reports counts (info;
 * a warning when samples were lost), frees. Safe when not started. */
void cp_pm_sampler_stop(void);

/* Whether sampling runs (devices enabled). */
int cp_pm_sampler_running(void);

#endif
