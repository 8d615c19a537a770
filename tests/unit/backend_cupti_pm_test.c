/* backend_cupti_pm_test.c -- the PM-sampling counter names
 * (backend/cupti/pm_metrics.c): the default set, both spellings of a
 * name, Perfworks names passed through, unknown names refused with the
 * closest known ones. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <string.h>

#include "backend/cupti/pm_metrics.h"
#include "core/error.h"

Test(pm_metrics, default_set_is_the_issue_list) {
  size_t n = 0;
  const cp_pm_metric *d = cp_pm_metrics_defaults(&n);
  const char *want[] = {"sm_throughput%", "dram_throughput%",
                        "achieved_occupancy%", "tensor_pipe%",
                        "l2_hit_rate%", "issue_slots%"};
  cr_assert_eq(n, 6);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(d[i].name, want[i]);
    cr_assert(strstr(d[i].cupti, "__"), "%s", d[i].cupti);
  }
}

Test(pm_metrics, both_spellings_resolve_to_the_row) {
  cp_pm_metric m;
  cr_assert_eq(cp_pm_metrics_resolve("l2_hit_rate%", &m), CPROTON_OK);
  cr_assert_str_eq(m.cupti, "lts__t_sector_hit_rate.pct");
  cr_assert_eq(cp_pm_metrics_resolve("lts__t_sector_hit_rate.pct", &m),
               CPROTON_OK);
  cr_assert_str_eq(m.name, "l2_hit_rate%");
  cr_assert_eq(cp_pm_metrics_resolve("dram__bytes_read.sum", &m), CPROTON_OK);
  cr_assert_str_eq(m.name, "dram__bytes_read.sum");
}

Test(pm_metrics, unknown_name_lists_close_names) {
  cp_pm_metric m;
  cr_assert_eq(cp_pm_metrics_resolve("sm_throughput", &m), CPROTON_EINVAL);
  const char *msg = cp_error_message();
  cr_assert(strstr(msg, "'sm_throughput'"), "%s", msg);
  cr_assert(strstr(msg, "did you mean sm_throughput%,"), "%s", msg);
  cr_assert_eq(cp_pm_metrics_resolve("Occupancy", &m), CPROTON_EINVAL);
  cr_assert_eq(cp_pm_metrics_resolve("sm__", &m), CPROTON_EINVAL);
  cr_assert_eq(cp_pm_metrics_resolve(NULL, &m), CPROTON_EINVAL);
}

Test(pm_metrics, distance) {
  cr_assert_eq(cp_pm_metrics_distance("kitten", "sitting"), 3);
  cr_assert_eq(cp_pm_metrics_distance("", "abc"), 3);
  cr_assert_eq(cp_pm_metrics_distance("same", "same"), 0);
}

#else
Test(pm_metrics, skipped_without_cupti) { cr_skip_test("built without CUPTI"); }
#endif
