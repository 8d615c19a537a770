/* backend/cupti/pm_metrics.h -- the PM-sampling mode's counter names
 * (cp_pm_metrics_*): the short metric names cproton stores in profiles
 * (Proton's rule: a trailing '%' marks a percentage the viewer shows as
 * such) and the CUPTI/Perfworks metric each one reads, plus any raw
 * Perfworks name the user gives. Pure table; not a hot path.
 *
 * Default set (GH100 names):
 *   sm_throughput%     sm__throughput.avg.pct_of_peak_sustained_elapsed
 *   dram_throughput%   gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
 *   achieved_occupancy% sm__warps_active.avg.pct_of_peak_sustained_active
 *   tensor_pipe%       sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
 *   l2_hit_rate%       lts__t_sector_hit_rate.pct
 *   issue_slots%       sm__inst_issued.avg.pct_of_peak_sustained_active
 * Whether the device can sample each one is only known from CUPTI on the
 * device (cuptiProfilerHostConfigAddMetrics); this table only names them. */
#ifndef CP_BACKEND_CUPTI_PM_METRICS_H
#define CP_BACKEND_CUPTI_PM_METRICS_H

#include <stddef.h>

typedef struct cp_pm_metric {
  const char *name;   /* stored in the profile, e.g. "sm_throughput%" */
  const char *cupti;  /* Perfworks metric the sampler asks CUPTI for */
  int sampled;        /* in the sampling mode's default set (else only
                         the exact mode reads it by default) */
  const char *exact;  /* Perfworks metric the exact mode (range profiler,
                         replay) reads: Nsight Compute's own */
} cp_pm_metric;

/* The table, in the order above; *n receives its length. The sampling
 * mode's default set is the rows with `sampled`; the exact mode's is all
 * of them. */
const cp_pm_metric *cp_pm_metrics_defaults(size_t *n);

/* Resolves a user's counter name: a short name of the table or a Perfworks
 * name of it (either spelling gives the table entry), or any other name
 * that looks like a Perfworks metric ("unit__counter.rollup...", checked by
 * CUPTI later), which is stored under its own name. Returns CPROTON_OK and
 * fills *out (pointers into the table or into `name`, which must outlive
 * *out); CPROTON_EINVAL for anything else, with a message that lists the
 * up to three closest known names by edit distance, e.g. "unknown
 * PM-sampling counter 'sm_throughput': did you mean sm_throughput%?". */
int cp_pm_metrics_resolve(const char *name, cp_pm_metric *out);

/* Levenshtein distance of a and b, capped at 64 characters each (longer
 * strings count as distance 64+). Exposed for tests. */
size_t cp_pm_metrics_distance(const char *a, const char *b);

#endif
