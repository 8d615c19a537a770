/* tools/viewer/advise_hwm.c -- what the advisor's rules take from measured
 * hardware metrics (PM sampling, issue 27; docs/advisor.md): a kernel
 * frame's dram_throughput% and sm_throughput% (X*ns / pm_sampled_ns, the
 * storage of docs/hardware-metrics.md). Measured values beat the roofline
 * model's estimate from FLOPs, bytes and peaks: the roofline rules judge a
 * kernel by them (and say so in the evidence), and a kernel that already
 * saturates DRAM is not told to raise occupancy or FLOP/s. Kept apart from
 * the rules' models (advise_rules.c) so that each can change alone.
 * Called by advise_rules.c. */
#include <math.h>

#include "advise.h"

int av_hwm_measured(const av_kernel *k, av_fact which, double *pct) {
  double w = k->f[AF_PM_NS], v = k->f[which];
  if (!(w > 0) || isnan(v))
    return 0;
  *pct = v / w;
  return 1;
}

int av_hwm_dram_saturated(const av_kernel *k) {
  double dram;
  return av_hwm_measured(k, AF_PM_DRAM, &dram) && dram >= AV_DRAM_SATURATED;
}

int av_hwm_roof(const av_kernel *k, int memory, double *fraction,
                av_finding *f) {
  double pct;
  if (!av_hwm_measured(k, memory ? AF_PM_DRAM : AF_PM_SM, &pct))
    return 0;
  *fraction = pct / 100;
  if (f->n_ev < AV_MAX_EVIDENCE)
    f->ev[f->n_ev++] = (av_evidence){
        memory ? "measured_dram_throughput%" : "measured_sm_throughput%", pct,
        NULL};
  return 1;
}
