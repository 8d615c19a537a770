/* core/hwm_attr.c -- time-weighted attribution of sampled hardware-metric
 * values to kernel intervals (formula and flags in hwm_attr.h). Invariant:
 * input is validated before any out field changes, so a bad batch leaves
 * the accumulated values as they were. Pure; runs on the PM-sampling
 * decoder thread, never in a CUPTI callback. */
#include <stddef.h>
#include <string.h>

#include "core/hwm_attr.h"
#include "core/error.h"

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

/* Samples as the two entry points hold them: sample i's t0 and t1 and its
 * `nm` values, `stride` bytes from sample i-1's (memcpy'd: the same code
 * reads cp_hwm_sample arrays and pm_attr's packed columns). */
typedef struct view {
  const char *t0, *t1, *v;
  size_t t_stride, v_stride, n, nm;
} view;

static uint64_t t_at(const char *base, size_t stride, size_t i) {
  uint64_t x;
  memcpy(&x, base + i * stride, sizeof x);
  return x;
}

static double v_at(const view *s, size_t i, size_t m) {
  double x;
  memcpy(&x, s->v + i * s->v_stride + m * sizeof x, sizeof x);
  return x;
}

static int check(const view *s, const cp_hwm_kernel *k, size_t nk) {
  for (size_t i = 0; i < s->n; i++) {
    uint64_t t0 = t_at(s->t0, s->t_stride, i), t1 = t_at(s->t1, s->t_stride, i);
    if (t1 < t0)
      return cp_error_set(CPROTON_EINVAL, "hardware-metric sample %zu ends "
                          "(%llu) before it starts (%llu)", i,
                          (unsigned long long)t1, (unsigned long long)t0);
    if (i && t0 < t_at(s->t1, s->t_stride, i - 1))
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
static void one_kernel(const view *s, cp_hwm_kernel *k, size_t nk, size_t j,
                       double *w) {
  cp_hwm_kernel *kj = &k[j];
  uint64_t covered = 0;
  for (size_t i = 0; i < s->n && t_at(s->t0, s->t_stride, i) < kj->end; i++) {
    uint64_t t0 = t_at(s->t0, s->t_stride, i);
    uint64_t ov = overlap(t0, t_at(s->t1, s->t_stride, i), kj->start, kj->end);
    if (!ov)
      continue;
    uint64_t lo = t0 > kj->start ? t0 : kj->start;
    for (size_t m = 0; m < s->nm; m++)
      w[m] += v_at(s, i, m) * (double)ov;
    kj->covered_ns += ov;
    kj->samples++;
    covered += ov;
    kj->shared += (uint32_t)others(k, nk, j, lo, lo + ov);
  }
  kj->unsampled_ns += (kj->end - kj->start) - covered;
}

int cp_hwm_attr_apply(const cp_hwm_sample *s, size_t n, cp_hwm_kernel *k,
                      size_t nk) {
  const char *b = (const char *)s; /* NULL when n is 0: no offset added */
  view v = {b, b ? b + offsetof(cp_hwm_sample, t1) : NULL,
            b ? b + offsetof(cp_hwm_sample, value) : NULL, sizeof *s,
            sizeof *s, n, 1};
  int rc = check(&v, k, nk);
  if (rc)
    return rc;
  for (size_t j = 0; j < nk; j++)
    one_kernel(&v, k, nk, j, &k[j].weighted);
  return CPROTON_OK;
}

int cp_hwm_attr_apply_metrics(const uint64_t *t, const double *values,
                              size_t n, size_t nm, cp_hwm_kernel *k,
                              size_t nk, double *weighted) {
  view v = {(const char *)t, t ? (const char *)(t + 1) : NULL,
            (const char *)values, 2 * sizeof *t, nm * sizeof *values, n, nm};
  int rc = check(&v, k, nk);
  if (rc)
    return rc;
  for (size_t j = 0; j < nk; j++)
    one_kernel(&v, k, nk, j, weighted + j * nm);
  return CPROTON_OK;
}

int cp_hwm_attr_value(const cp_hwm_kernel *k, double *out) {
  if (!k->covered_ns)
    return 0;
  *out = k->weighted / (double)k->covered_ns;
  return 1;
}
