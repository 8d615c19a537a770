/* core/hwm_attr.c -- time-weighted attribution of sampled hardware-metric
 * values to kernel intervals (formula and flags in hwm_attr.h). Invariant:
 * input is validated before any out field changes, so a bad batch leaves
 * the accumulated values as they were. Pure; runs on the PM-sampling
 * decoder thread, never in a CUPTI callback. */
#include "core/hwm_attr.h"
#include "core/error.h"

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

static int check(const cp_hwm_sample *s, size_t n, const cp_hwm_kernel *k,
                 size_t nk) {
  for (size_t i = 0; i < n; i++) {
    if (s[i].t1 < s[i].t0)
      return cp_error_set(CPROTON_EINVAL, "hardware-metric sample %zu ends "
                          "(%llu) before it starts (%llu)", i,
                          (unsigned long long)s[i].t1,
                          (unsigned long long)s[i].t0);
    if (i && s[i].t0 < s[i - 1].t1)
      return cp_error_set(CPROTON_EINVAL, "hardware-metric sample %zu starts "
                          "before sample %zu ends (samples must be sorted "
                          "and disjoint)", i, i - 1);
  }
  for (size_t j = 0; j < nk; j++)
    if (k[j].end < k[j].start)
      return cp_error_set(CPROTON_EINVAL, "kernel interval %zu ends before "
                          "it starts", j);
  return CPROTON_OK;
}

/* Kernels other than `self` that overlap [t0, t1). */
static int others(const cp_hwm_kernel *k, size_t nk, size_t self,
                  uint64_t t0, uint64_t t1) {
  for (size_t j = 0; j < nk; j++)
    if (j != self && overlap(t0, t1, k[j].start, k[j].end))
      return 1;
  return 0;
}

/* Samples are sorted, so the covered time of kernel j is the union of its
 * overlaps; the rest of its run is unsampled. */
static void one_kernel(const cp_hwm_sample *s, size_t n, cp_hwm_kernel *k,
                       size_t nk, size_t j) {
  cp_hwm_kernel *kj = &k[j];
  uint64_t covered = 0;
  for (size_t i = 0; i < n && s[i].t0 < kj->end; i++) {
    uint64_t ov = overlap(s[i].t0, s[i].t1, kj->start, kj->end);
    if (!ov)
      continue;
    uint64_t lo = s[i].t0 > kj->start ? s[i].t0 : kj->start;
    kj->weighted += s[i].value * (double)ov;
    kj->covered_ns += ov;
    kj->samples++;
    covered += ov;
    kj->shared += (uint32_t)others(k, nk, j, lo, lo + ov);
  }
  kj->unsampled_ns += (kj->end - kj->start) - covered;
}

int cp_hwm_attr_apply(const cp_hwm_sample *s, size_t n, cp_hwm_kernel *k,
                      size_t nk) {
  int rc = check(s, n, k, nk);
  if (rc)
    return rc;
  for (size_t j = 0; j < nk; j++)
    one_kernel(s, n, k, nk, j);
  return CPROTON_OK;
}

int cp_hwm_attr_value(const cp_hwm_kernel *k, double *out) {
  if (!k->covered_ns)
    return 0;
  *out = k->weighted / (double)k->covered_ns;
  return 1;
}
