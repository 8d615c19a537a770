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
