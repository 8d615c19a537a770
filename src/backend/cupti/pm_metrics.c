/* backend/cupti/pm_metrics.c -- name table of the PM-sampling counters and
 * the lookup that refuses unknown names with the closest known ones.
 * Invariant: every name is in exactly one table row; a refusal always names
 * the offending counter. Pure; not a hot path (mode parsing). */
#include <stdio.h>
#include <string.h>

#include "backend/cupti/pm_metrics.h"
#include "core/error.h"

#define CAP 64

/* Each counter is read from what CUPTI can sample on GH100 in one pass
 * together (tests/gpu/pm_probe.c), chosen by agreement with the metric of
 * the same meaning in Nsight Compute (in brackets) on a Triton matmul, a
 * cuBLAS matmul and a vector add (tests/gpu/pmsampling.sh; the figures
 * are in docs/hardware-metrics.md):
 * - sm_throughput% [sm__throughput.avg.pct_of_peak_sustained_elapsed]: that
 *   metric needs 19 passes; its TriageCompute group samples in one.
 * - tensor_pipe% [sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_
 *   sustained_active]: not sampleable; its realtime TriageCompute form per
 *   active cycle agrees within 1.4 pp (per elapsed cycle: 5-9 pp low).
 * - issue_slots% [sm__inst_issued.avg.pct_of_peak_sustained_active]: does
 *   not fit one pass beside the occupancy counter; instructions executed
 *   per realtime cycle agree within 1.1 pp.
 * - l2_hit_rate% [lts__t_sector_hit_rate.pct]: needs 2 passes, so only the
 *   exact mode (range profiler, replay) reads it; the sampleable LTS
 *   TriageCompute hit rates read half of Nsight Compute's value on every
 *   kernel tried, so the sampling mode does not offer them under this
 *   name. */
static const cp_pm_metric defaults[] = {
    {"sm_throughput%",
     "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", 1,
     "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
    {"dram_throughput%",
     "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 1,
     "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"},
    {"achieved_occupancy%",
     "sm__warps_active.avg.pct_of_peak_sustained_active", 1,
     "sm__warps_active.avg.pct_of_peak_sustained_active"},
    {"tensor_pipe%",
     "TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg."
     "pct_of_peak_sustained_active", 1,
     "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"},
    {"l2_hit_rate%", "lts__t_sector_hit_rate.pct", 0,
     "lts__t_sector_hit_rate.pct"},
    {"issue_slots%",
     "TPC.TriageCompute.sm__inst_executed_realtime.avg."
     "pct_of_peak_sustained_elapsed", 1,
     "sm__inst_issued.avg.pct_of_peak_sustained_active"},
};
#define NDEF (sizeof defaults / sizeof defaults[0])

const cp_pm_metric *cp_pm_metrics_defaults(size_t *n) {
  *n = NDEF;
  return defaults;
}

size_t cp_pm_metrics_distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b), row[CAP + 1];
  if (na > CAP || nb > CAP)
    return CAP + (na > nb ? na - nb : nb - na);
  for (size_t j = 0; j <= nb; j++)
    row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[nb];
}

/* "[Group.]unit__counter.rollup[...]": optional dotted groups of letters
 * (TriageCompute, LTS.TriageCompute), a lower-case unit, "__", a dot. */
static int perfworks_like(const char *s) {
  const char *u = strstr(s, "__");
  if (!u || u == s || !strchr(u + 2, '.') || u[2] == '.' || u[-1] == '.' ||
      s[0] == '.' || strstr(s, ".."))
    return 0;
  for (const char *p = s; *p; p++) {
    int lower = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                *p == '_' || *p == '.';
    if (!lower && !(p < u && *p >= 'A' && *p <= 'Z'))
      return 0;
  }
  return 1;
}

/* The three table names (short or Perfworks) closest to `name`. */
static void closest(const char *name, const char *best[3]) {
  size_t d[3] = {(size_t)-1, (size_t)-1, (size_t)-1};
  for (size_t i = 0; i < 2 * NDEF; i++) {
    const char *c = i < NDEF ? defaults[i].name : defaults[i - NDEF].cupti;
    size_t di = cp_pm_metrics_distance(name, c);
    for (size_t k = 0; k < 3; k++) {
      if (di >= d[k])
        continue;
      for (size_t m = 2; m > k; m--)
        d[m] = d[m - 1], best[m] = best[m - 1];
      d[k] = di, best[k] = c;
      break;
    }
  }
}

int cp_pm_metrics_resolve(const char *name, cp_pm_metric *out) {
  for (size_t i = 0; name && i < NDEF; i++)
    if (!strcmp(name, defaults[i].name) || !strcmp(name, defaults[i].cupti) ||
        !strcmp(name, defaults[i].exact))
      return *out = defaults[i], CPROTON_OK;
  if (name && perfworks_like(name))
    return *out = (cp_pm_metric){name, name, 1, name}, CPROTON_OK;
  const char *b[3] = {"", "", ""};
  closest(name ? name : "", b);
  return cp_error_set(CPROTON_EINVAL, "unknown PM-sampling counter '%s': "
                      "did you mean %s, %s or %s? (or give a Perfworks name "
                      "such as unit__counter.avg)", name ? name : "(null)",
                      b[0], b[1], b[2]);
}
