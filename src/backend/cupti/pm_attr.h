/* backend/cupti/pm_attr.h -- the PM-sampling mode's meeting point of
 * kernel records and decoded samples (cp_pm_attr_*): kernels wait here
 * until every sample that can overlap them is decoded, then receive the
 * samples' time-weighted values (core/hwm_attr.h) as metrics on their
 * calling context's kernel node:
 *
 *   pm_sampled_ns      ns of the kernel covered by samples (the weight)
 *   pm_unsampled_ns    ns of the kernel no sample covered
 *   pm_samples         samples that overlapped the kernel
 *   pm_shared_samples  of those, samples that overlapped another kernel
 *                      too (concurrent kernels: apportioned by overlap)
 *   <name>*ns          per counter: sum of value x overlap ns
 *
 * so any node's value of a counter is <name>*ns / pm_sampled_ns, and sums
 * over subtrees stay weighted means (docs/hardware-metrics.md).
 *
 * Threads: kernels arrive on CUPTI's buffer thread, samples and
 * settlement on the decoder thread; one mutex. Samples are kept
 * CP_PM_ATTR_RETAIN_NS behind the newest so that late kernel records
 * (activity buffers are delivered in batches) still find theirs; a kernel
 * record older than every kept sample is counted as `late`, not guessed. */
#ifndef CP_BACKEND_CUPTI_PM_ATTR_H
#define CP_BACKEND_CUPTI_PM_ATTR_H

#include <stddef.h>
#include <stdint.h>

#include "core/metric.h"
#include "core/session.h"

#define CP_PM_ATTR_RETAIN_NS 5000000000ull
#define CP_PM_ATTR_DEVICES 64

/* Where settled values go: cp_session_deliver_metric, or a test's fake. */
typedef int (*cp_pm_deliver_fn)(const cp_launch_site *site,
                                const char *kernel, const char *metric,
                                cp_value v);

typedef struct cp_pm_attr_stats {
  uint64_t samples;    /* samples kept */
  uint64_t irregular;  /* samples longer than 2 intervals (dropped) */
  uint64_t kernels;    /* kernels given values */
  uint64_t unsampled;  /* kernels no sample overlapped */
  uint64_t late;       /* kernel records older than every kept sample */
  uint64_t errors;     /* delivery failures or out of memory */
} cp_pm_attr_stats;

/* Starts a collection of `n` counters stored as names[i] (copied);
 * `interval_ns` is the sampling interval; `deliver` NULL means
 * cp_session_deliver_metric. Errors: ENOMEM. */
int cp_pm_attr_begin(size_t n, const char *const *names, uint64_t interval_ns,
                     cp_pm_deliver_fn deliver);

/* Marks `device` as sampled (kernels of other devices are ignored). */
void cp_pm_attr_device_on(uint32_t device);

/* A kernel record: [start, end) ns on cproton's clock, copied. */
void cp_pm_attr_kernel(const char *name, const cp_launch_site *site,
                       uint64_t start, uint64_t end, uint32_t device);

/* A decoded sample of `device`: [t0, t1) ns on cproton's clock, one value
 * per counter (NaN: not evaluated; the sample is dropped). Samples of a
 * device arrive in time order. */
void cp_pm_attr_sample(uint32_t device, uint64_t t0, uint64_t t1,
                       const double *values);

/* Gives values to every kernel whose samples are all decoded (it ended
 * before the device's newest sample), or to every kernel when `all`, and
 * drops samples no kernel can need any more. Returns delivery errors. */
int cp_pm_attr_settle(int all);

/* Counters so far. */
void cp_pm_attr_stats_get(cp_pm_attr_stats *out);

/* Frees everything (after a final settle). */
void cp_pm_attr_end(void);

#endif
