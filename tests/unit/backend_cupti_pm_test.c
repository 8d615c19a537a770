/* backend_cupti_pm_test.c -- the PM-sampling counter names
 * (backend/cupti/pm_metrics.c): the default set, both spellings of a
 * name, Perfworks names passed through, unknown names refused with the
 * closest known ones. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cupti/pm_attr.h"
#include "backend/cupti/pm_metrics.h"
#include "backend/cupti/pm_mode.h"
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
  cr_assert(!m.sampled, "2 passes: the exact mode's, not the sampler's");
  cr_assert_eq(cp_pm_metrics_resolve(m.cupti, &m), CPROTON_OK);
  cr_assert_str_eq(m.name, "l2_hit_rate%");
  cr_assert_eq(cp_pm_metrics_resolve("TriageCompute.sm__throughput.avg."
                                     "pct_of_peak_sustained_elapsed", &m),
               CPROTON_OK);
  cr_assert_str_eq(m.name, "sm_throughput%");
  /* any group-prefixed Perfworks name passes through as itself */
  cr_assert_eq(cp_pm_metrics_resolve("SM_A.TriageCompute.l1tex__throughput."
                                     "avg.pct_of_peak_sustained_elapsed", &m),
               CPROTON_OK);
  cr_assert(!strncmp(m.name, "SM_A.", 5));
  cr_assert_eq(cp_pm_metrics_resolve(".sm__x.avg", &m), CPROTON_EINVAL);
  cr_assert_eq(cp_pm_metrics_resolve("TriageCompute.__x.avg", &m),
               CPROTON_EINVAL);
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


Test(pm_mode, defaults_and_options) {
  cp_pm_options o;
  cr_assert_eq(cp_pm_mode_parse("pmsampling", &o), CPROTON_OK);
  cr_assert(o.enabled && !o.exact && !o.user_metrics);
  cr_assert_eq(o.n, 5, "the sampled rows of the table");
  for (size_t i = 0; i < o.n; i++)
    cr_assert_str_neq(o.name[i], "l2_hit_rate%");
  cr_assert_eq(o.interval_ns, CP_PM_INTERVAL_DEFAULT);
  cr_assert_str_eq(o.name[1], "dram_throughput%");
  cr_assert_eq(cp_pm_mode_parse("PMSampling:interval=20000:metrics="
                                "dram_throughput%,l1tex__throughput.avg."
                                "pct_of_peak_sustained_active", &o),
               CPROTON_OK);
  cr_assert(o.user_metrics);
  cr_assert_eq(o.n, 2);
  cr_assert_eq(o.interval_ns, 20000);
  cr_assert_str_eq(o.cupti[0],
                   "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
  cr_assert_str_eq(o.name[1], o.cupti[1]);
  cr_assert_eq(cp_pm_mode_parse("pmsampling:exact", &o), CPROTON_OK);
  cr_assert(o.exact);
  cr_assert_eq(o.n, 6, "the exact mode reads the whole table");
  cr_assert(cp_pm_mode_is("pmsampling:x") && !cp_pm_mode_is("pcsampling") &&
            !cp_pm_mode_is("pmsamplingx") && !cp_pm_mode_is(NULL));
}

Test(pm_mode, bad_input_names_option_and_offset) {
  cp_pm_options o;
  cr_assert_eq(cp_pm_mode_parse("pmsampling:interval=5", &o), CPROTON_EINVAL);
  cr_assert(strstr(cp_error_message(), "1000..1000000000 (ns) at offset 20"), "%s",
            cp_error_message());
  cr_assert_eq(cp_pm_mode_parse("pmsampling:interval=99999999999", &o),
               CPROTON_EINVAL);
  cr_assert_eq(cp_pm_mode_parse("pmsampling:bogus", &o), CPROTON_EINVAL);
  cr_assert(strstr(cp_error_message(), "unknown option at offset 11"), "%s",
            cp_error_message());
  cr_assert_eq(cp_pm_mode_parse("pmsampling:metrics=", &o), CPROTON_EINVAL);
  cr_assert_eq(cp_pm_mode_parse("pmsampling:metrics=a,,b", &o),
               CPROTON_EINVAL);
  cr_assert_eq(cp_pm_mode_parse("pmsampling:metrics=sm_throughput", &o),
               CPROTON_EINVAL);
  cr_assert(strstr(cp_error_message(), "did you mean sm_throughput%"), "%s",
            cp_error_message());
  cr_assert_eq(cp_pm_mode_parse("pmsampling:metrics=issue_slots%,"
                                "issue_slots%", &o), CPROTON_EINVAL);
  cr_assert(strstr(cp_error_message(), "named twice"), "%s",
            cp_error_message());
  cr_assert_eq(cp_pm_mode_parse("pcsampling", &o), CPROTON_EINVAL);
}

Test(pm_mode, same) {
  cp_pm_options a, b;
  cp_pm_mode_parse("pmsampling", &a);
  cp_pm_mode_parse("pmsampling:interval=250000", &b);
  cr_assert(cp_pm_options_same(&a, &b));
  cp_pm_mode_parse("pmsampling:interval=20000", &b);
  cr_assert(!cp_pm_options_same(&a, &b));
}

/* ---- pm_attr: a recording delivery ------------------------------------- */

typedef struct got {
  char kernel[32], metric[48];
  cp_value v;
} got;
static got seen[256];
static size_t nseen;

static int record(const cp_launch_site *site, const char *kernel,
                  const char *metric, cp_value v) {
  (void)site;
  if (nseen < 256) {
    snprintf(seen[nseen].kernel, sizeof seen[nseen].kernel, "%s", kernel);
    snprintf(seen[nseen].metric, sizeof seen[nseen].metric, "%s", metric);
    seen[nseen++].v = v;
  }
  return 0;
}

static const got *find(const char *kernel, const char *metric) {
  for (size_t i = 0; i < nseen; i++)
    if (!strcmp(seen[i].kernel, kernel) && !strcmp(seen[i].metric, metric))
      return &seen[i];
  return NULL;
}

static void begin(void) {
  const char *names[] = {"a%", "b%"};
  nseen = 0;
  cp_pm_attr_begin(2, names, 100, record);
  cp_pm_attr_device_on(0);
}

Test(pm_attr, weighted_values_once_samples_cover_the_kernel) {
  cp_launch_site site = {0};
  begin();
  cp_pm_attr_kernel("k1", &site, 1050, 1250, 0); /* 200 ns */
  cp_pm_attr_kernel("other", &site, 1000, 1100, 1); /* device 1: not on */
  double v1[] = {10, 1}, v2[] = {30, 3}, v3[] = {50, 5};
  cp_pm_attr_sample(0, 1000, 1100, v1);
  cp_pm_attr_sample(0, 1100, 1200, v2);
  cp_pm_attr_settle(0);
  cr_assert_eq(nseen, 0, "k1 ends after the newest sample: it waits");
  cp_pm_attr_sample(0, 1200, 1300, v3);
  cp_pm_attr_settle(0);
  /* overlaps 50, 100, 50 ns: (10*50 + 30*100 + 50*50) / 200 = 30 */
  const got *w = find("k1", "pm_sampled_ns"), *a = find("k1", "a%*ns");
  cr_assert(w && a);
  cr_assert_eq(w->v.u.i, 200);
  cr_assert_float_eq(a->v.u.d / (double)w->v.u.i, 30.0, 1e-9);
  cr_assert_float_eq(find("k1", "b%*ns")->v.u.d / 200.0, 3.0, 1e-9);
  cr_assert_eq(find("k1", "pm_samples")->v.u.i, 3);
  cr_assert_eq(find("k1", "pm_shared_samples")->v.u.i, 0);
  cr_assert_null(find("other", "pm_sampled_ns"));
  cp_pm_attr_stats st;
  cp_pm_attr_stats_get(&st);
  cr_assert_eq(st.kernels, 1);
  cr_assert_eq(st.samples, 3);
  cp_pm_attr_end();
}

Test(pm_attr, concurrent_kernels_share_and_are_flagged) {
  cp_launch_site site = {0};
  begin();
  cp_pm_attr_kernel("x", &site, 1000, 1200, 0);
  cp_pm_attr_kernel("y", &site, 1100, 1300, 0);
  double v[] = {40, 4};
  for (uint64_t t = 1000; t < 1300; t += 100)
    cp_pm_attr_sample(0, t, t + 100, v);
  cp_pm_attr_settle(0);
  cr_assert_eq(find("x", "pm_shared_samples")->v.u.i, 1);
  cr_assert_eq(find("y", "pm_shared_samples")->v.u.i, 1);
  cr_assert_float_eq(find("y", "a%*ns")->v.u.d, 40.0 * 200, 1e-9);
  cp_pm_attr_end();
}

Test(pm_attr, irregular_samples_and_unsampled_kernels) {
  cp_launch_site site = {0};
  begin();
  double v[] = {99, 9}, nan[] = {NAN, 1};
  cp_pm_attr_sample(0, 0, 1000, v);      /* 10 intervals: the first one */
  cp_pm_attr_sample(0, 1000, 1100, nan); /* not evaluated */
  cp_pm_attr_kernel("short", &site, 2000, 2010, 0);
  cp_pm_attr_settle(1); /* at stop: every kernel, sampled or not */
  cr_assert_eq(find("short", "pm_sampled_ns")->v.u.i, 0);
  cr_assert_eq(find("short", "pm_unsampled_ns")->v.u.i, 10);
  cr_assert_null(find("short", "a%*ns"), "no value is made up");
  cp_pm_attr_stats st;
  cp_pm_attr_stats_get(&st);
  cr_assert_eq(st.irregular, 2);
  cr_assert_eq(st.unsampled, 1);
  cp_pm_attr_end();
}

#else
Test(pm_metrics, skipped_without_cupti) { cr_skip_test("built without CUPTI"); }
#endif
