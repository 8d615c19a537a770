/* core/hwm_attr.c -- time-weighted attribution of sampled hardware-metric
 * values to kernel intervals (formula and flags in hwm_attr.h). Invariant:
 * input is validated before any out field changes, so a bad batch leaves
 * the accumulated values as they were. Pure; runs on the PM-sampling
 * decoder thread, never in a CUPTI callback. */
#include <stddef.h>
#include <stdlib.h>

#include "core/hwm_attr.h"
#include "core/error.h"

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

/* Samples in pm_attr's packed columns: sample i spans [t[2i], t[2i+1])
 * and holds v[i*nm .. i*nm+nm). */
static int check(const uint64_t *t, size_t n, const cp_hwm_kernel *k,
                 size_t nk) {
  for (size_t i = 0; i < n; i++) {
    if (t[2 * i + 1] < t[2 * i])
      return cp_error_set(CPROTON_EINVAL, "hardware-metric sample %zu ends "
                          "(%llu) before it starts (%llu)", i,
                          (unsigned long long)t[2 * i + 1],
                          (unsigned long long)t[2 * i]);
    if (i && t[2 * i] < t[2 * i - 1])
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
 * overlaps; the rest of its run is unsampled. Each overlap is computed once
 * and weights all `nm` values into w[0..nm). */
static void one_kernel(const uint64_t *t, const double *v, size_t n,
                       size_t nm, cp_hwm_kernel *k, size_t nk, size_t j,
                       double *w) {
  cp_hwm_kernel *kj = &k[j];
  uint64_t covered = 0;
  for (size_t i = 0; i < n && t[2 * i] < kj->end; i++) {
    uint64_t ov = overlap(t[2 * i], t[2 * i + 1], kj->start, kj->end);
    if (!ov)
      continue;
    uint64_t lo = t[2 * i] > kj->start ? t[2 * i] : kj->start;
    for (size_t m = 0; m < nm; m++)
      w[m] += v[i * nm + m] * (double)ov;
    kj->covered_ns += ov;
    kj->samples++;
    covered += ov;
    kj->shared += (uint32_t)others(k, nk, j, lo, lo + ov);
  }
  kj->unsampled_ns += (kj->end - kj->start) - covered;
}

int cp_hwm_attr_apply_metrics(const uint64_t *t, const double *values,
                              size_t n, size_t nm, cp_hwm_kernel *k,
                              size_t nk, double *weighted) {
  int rc = check(t, n, k, nk);
  if (rc)
    return rc;
  for (size_t j = 0; j < nk; j++)
    one_kernel(t, values, n, nm, k, nk, j, weighted + j * nm);
  return CPROTON_OK;
}

/* One metric in cp_hwm_sample form: the same pass over packed copies,
 * each kernel's weighted sum continued from its field (the same additions
 * in the same order) and written back only on success. */
int cp_hwm_attr_apply(const cp_hwm_sample *s, size_t n, cp_hwm_kernel *k,
                      size_t nk) {
  uint64_t *t = malloc((n ? 2 * n : 1) * sizeof *t);
  double *v = malloc((n ? n : 1) * sizeof *v);
  double *w = malloc((nk ? nk : 1) * sizeof *w);
  int rc = t && v && w ? CPROTON_OK
                       : cp_error_set(CPROTON_ENOMEM, "no memory for %zu "
                                      "hardware-metric samples", n);
  for (size_t i = 0; !rc && i < n; i++)
    t[2 * i] = s[i].t0, t[2 * i + 1] = s[i].t1, v[i] = s[i].value;
  for (size_t j = 0; !rc && j < nk; j++)
    w[j] = k[j].weighted;
  if (!rc)
    rc = cp_hwm_attr_apply_metrics(t, v, n, 1, k, nk, w);
  for (size_t j = 0; !rc && j < nk; j++)
    k[j].weighted = w[j];
  free(t);
  free(v);
  free(w);
  return rc;
}

int cp_hwm_attr_value(const cp_hwm_kernel *k, double *out) {
  if (!k->covered_ns)
    return 0;
  *out = k->weighted / (double)k->covered_ns;
  return 1;
}
