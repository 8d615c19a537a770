/* core_hwm_attr_test.c -- attribution arithmetic of sampled hardware
 * metrics (core/hwm_attr.c): time-weighted averages, partial overlaps,
 * concurrent kernels apportioned and flagged, unsampled time, bad input. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/error.h"
#include "core/hwm_attr.h"

static double value(const cp_hwm_kernel *k) {
  double v = -1;
  cr_assert(cp_hwm_attr_value(k, &v));
  return v;
}

Test(hwm_attr, time_weighted_average_over_partial_overlaps) {
  /* Samples of 10 ns: 20%, 80%, 50%. The kernel [5, 25) sees 5 ns of the
   * first, 10 of the second, 5 of the third: (100+800+250)/20 = 57.5. */
  cp_hwm_sample s[] = {{0, 10, 20}, {10, 20, 80}, {20, 30, 50}};
  cp_hwm_kernel k[1] = {{.start = 5, .end = 25}};
  cr_assert_eq(cp_hwm_attr_apply(s, 3, k, 1), CPROTON_OK);
  cr_assert_float_eq(value(&k[0]), 57.5, 1e-9);
  cr_assert_eq(k[0].samples, 3);
  cr_assert_eq(k[0].shared, 0);
  cr_assert_eq(k[0].covered_ns, 20);
  cr_assert_eq(k[0].unsampled_ns, 0);
}

Test(hwm_attr, concurrent_kernels_share_and_are_flagged) {
  /* A [0, 20) and B [10, 30) overlap in [10, 20): the sample there (60%)
   * goes to both and counts as shared for both; the others do not. */
  cp_hwm_sample s[] = {{0, 10, 10}, {10, 20, 60}, {20, 30, 30}};
  cp_hwm_kernel k[2] = {{.start = 0, .end = 20}, {.start = 10, .end = 30}};
  cr_assert_eq(cp_hwm_attr_apply(s, 3, k, 2), CPROTON_OK);
  cr_assert_float_eq(value(&k[0]), 35.0, 1e-9);
  cr_assert_float_eq(value(&k[1]), 45.0, 1e-9);
  cr_assert_eq(k[0].shared, 1);
  cr_assert_eq(k[1].shared, 1);
  cr_assert_eq(k[0].samples, 2);
}

Test(hwm_attr, gaps_are_unsampled_not_invented) {
  /* A short kernel between samples gets no value; a longer one counts
   * the gap as unsampled time. */
  cp_hwm_sample s[] = {{0, 10, 40}, {30, 40, 90}};
  cp_hwm_kernel k[2] = {{.start = 12, .end = 18}, {.start = 5, .end = 35}};
  double v = -1;
  cr_assert_eq(cp_hwm_attr_apply(s, 2, k, 2), CPROTON_OK);
  cr_assert_eq(cp_hwm_attr_value(&k[0], &v), 0);
  cr_assert_eq(v, -1);
  cr_assert_eq(k[0].unsampled_ns, 6);
  cr_assert_float_eq(value(&k[1]), 65.0, 1e-9);
  cr_assert_eq(k[1].unsampled_ns, 20);
}

Test(hwm_attr, batches_accumulate) {
  cp_hwm_sample a[] = {{0, 10, 20}}, b[] = {{10, 30, 50}};
  cp_hwm_kernel k[1] = {{.start = 0, .end = 30}};
  cr_assert_eq(cp_hwm_attr_apply(a, 1, k, 1), CPROTON_OK);
  k[0].unsampled_ns = 0; /* the first batch saw only [0, 10) */
  cr_assert_eq(cp_hwm_attr_apply(b, 1, k, 1), CPROTON_OK);
  cr_assert_float_eq(value(&k[0]), 40.0, 1e-9);
  cr_assert_eq(k[0].samples, 2);
}

Test(hwm_attr, bad_input_is_refused_and_changes_nothing) {
  cp_hwm_sample unsorted[] = {{10, 20, 1}, {5, 8, 1}};
  cp_hwm_sample backwards[] = {{10, 5, 1}};
  cp_hwm_kernel k[1] = {{.start = 0, .end = 30}};
  cr_assert_eq(cp_hwm_attr_apply(unsorted, 2, k, 1), CPROTON_EINVAL);
  cr_assert(strstr(cp_error_message(), "sample 1"));
  cr_assert_eq(cp_hwm_attr_apply(backwards, 1, k, 1), CPROTON_EINVAL);
  cr_assert(strstr(cp_error_message(), "sample 0 ends"));
  cr_assert_eq(k[0].samples, 0);
  cr_assert_eq(k[0].covered_ns, 0);
  cp_hwm_kernel bad[1] = {{.start = 9, .end = 3}};
  cr_assert_eq(cp_hwm_attr_apply(NULL, 0, bad, 1), CPROTON_EINVAL);
  cr_assert(strstr(cp_error_message(), "kernel interval 0"));
}

/* Several counters sampled together (pm_attr's packed columns): one pass
 * gives each counter the bits cp_hwm_attr_apply gives it alone, and the
 * overlap counts once. Values with many significant bits and uneven
 * overlaps, so a different order of additions would show. */
Test(hwm_attr, metrics_at_once_match_one_at_a_time_bit_for_bit) {
  enum { N = 40, NM = 3, NK = 4 };
  uint64_t t[2 * N];
  double v[N * NM];
  for (size_t i = 0; i < N; i++) {
    t[2 * i] = 7 * i + (i % 3), t[2 * i + 1] = 7 * i + 7;
    for (size_t m = 0; m < NM; m++)
      v[i * NM + m] = 100.0 / (double)(i + 3 + 11 * m) + 0.1 * (double)m;
  }
  const cp_hwm_kernel spans[NK] = {{.start = 3, .end = 101}, {.start = 50, .end = 53},
                                   {.start = 90, .end = 250}, {.start = 260, .end = 400}};
  cp_hwm_kernel all[NK];
  double w[NK * NM] = {0};
  memcpy(all, spans, sizeof all);
  cr_assert_eq(cp_hwm_attr_apply_metrics(t, v, N, NM, all, NK, w), CPROTON_OK);
  for (size_t m = 0; m < NM; m++) {
    cp_hwm_sample s[N];
    cp_hwm_kernel one[NK];
    for (size_t i = 0; i < N; i++)
      s[i] = (cp_hwm_sample){t[2 * i], t[2 * i + 1], v[i * NM + m]};
    memcpy(one, spans, sizeof one);
    cr_assert_eq(cp_hwm_attr_apply(s, N, one, NK), CPROTON_OK);
    for (size_t j = 0; j < NK; j++) {
      cr_assert_eq(memcmp(&one[j].weighted, &w[j * NM + m], sizeof(double)), 0,
                   "kernel %zu counter %zu: %.17g vs %.17g", j, m, one[j].weighted, w[j * NM + m]);
      cr_assert_eq(one[j].covered_ns, all[j].covered_ns);
      cr_assert_eq(one[j].unsampled_ns, all[j].unsampled_ns);
      cr_assert_eq(one[j].samples, all[j].samples);
      cr_assert_eq(one[j].shared, all[j].shared);
    }
  }
  /* [50, 56) over the kernel at 50; [84, 91), [92, 98), [100, 105) over the one at 90 */
  cr_assert_eq(all[0].shared, 4);
  uint64_t bad[] = {10, 5};
  cr_assert_eq(cp_hwm_attr_apply_metrics(bad, v, 1, NM, all, 1, w), CPROTON_EINVAL);
}
