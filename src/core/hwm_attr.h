/* core/hwm_attr.h -- attribution of sampled hardware-metric values to
 * kernels (cp_hwm_attr_*), the arithmetic behind the PM-sampling mode of
 * issue 27.
 *
 * A sampler (CUPTI PM sampling) reports, per device, a sequence of samples:
 * a value of one metric (e.g. SM throughput %) averaged over a sample
 * interval [t0, t1). Kernels have activity intervals [start, end) on the
 * same clock. Each kernel receives the time-weighted average of the samples
 * that overlap it:
 *
 *   value(k) = sum_s v_s * |s ∩ k| / sum_s |s ∩ k|
 *
 * A sample interval that overlaps several kernels at once (concurrent
 * kernels) cannot be split by the hardware: its value is given to each of
 * them, weighted by each one's overlap, and every kernel that shares any
 * sampled time with another counts those samples in `shared` (the flag
 * reported as a count metric). Time a kernel runs without any sample over
 * it is `unsampled_ns` (short kernels between samples), so a caller can
 * say "no value" instead of inventing one. Pure; not a hot path (runs on
 * the decoder thread, per decoded batch). */
#ifndef CP_CORE_HWM_ATTR_H
#define CP_CORE_HWM_ATTR_H

#include <stddef.h>
#include <stdint.h>

/* One decoded sample of one metric: its value over [t0, t1) ns. */
typedef struct cp_hwm_sample {
  uint64_t t0, t1;
  double value;
} cp_hwm_sample;

/* One kernel's activity interval, and what attribution gave it. */
typedef struct cp_hwm_kernel {
  uint64_t start, end;   /* in: activity interval, ns, same clock */
  double weighted;       /* out: sum of value * overlap_ns */
  uint64_t covered_ns;   /* out: sum of overlap_ns (the weight) */
  uint64_t unsampled_ns; /* out: run time no sample covers */
  uint32_t samples;      /* out: samples that overlap this kernel */
  uint32_t shared;       /* out: of those, samples that also overlap
                            another kernel (concurrency flag) */
} cp_hwm_kernel;

/* Attributes `n` samples (sorted by t0, non-overlapping, t0 <= t1) to `nk`
 * kernels (any order, any overlap among themselves), accumulating into the
 * out fields, which the caller zeroes once and may accumulate over several
 * batches. Returns CPROTON_OK, or CPROTON_EINVAL with a message naming the
 * index of the first sample that is unsorted or has t1 < t0, or of the
 * first kernel with end < start (nothing is accumulated then). O(n * nk)
 * worst case; samples past all kernels end the scan early. Copies the
 * samples into cp_hwm_attr_apply_metrics's layout (CPROTON_ENOMEM when
 * that fails, nothing accumulated). */
int cp_hwm_attr_apply(const cp_hwm_sample *s, size_t n, cp_hwm_kernel *k,
                      size_t nk);

/* cp_hwm_attr_apply for `nm` metrics sampled together, each overlap
 * computed once: sample i spans [t[2i], t[2i+1]) and holds values
 * values[i*nm .. i*nm+nm); kernel j's sums of value * overlap_ns go to
 * weighted[j*nm + m] (the caller zeroes them once), and its covered_ns,
 * unsampled_ns, samples and shared are accumulated once, not per metric.
 * Each sum adds the same terms in the same order as cp_hwm_attr_apply on
 * that metric alone, so the results are bit-identical. Errors: those of
 * cp_hwm_attr_apply. */
int cp_hwm_attr_apply_metrics(const uint64_t *t, const double *values,
                              size_t n, size_t nm, cp_hwm_kernel *k,
                              size_t nk, double *weighted);

/* The kernel's time-weighted average; returns 0 and leaves *out alone when
 * no sample overlapped it (no value rather than a made-up one). */
int cp_hwm_attr_value(const cp_hwm_kernel *k, double *out);

#endif
