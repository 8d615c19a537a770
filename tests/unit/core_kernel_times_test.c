/* core_kernel_times_test.c -- intra-kernel regions move onto the CUPTI
 * kernel of their launch when a trace is written: the latest CUPTI launch
 * of the same kernel name before the region's launch, within the gap;
 * otherwise they stay where the launch time put them. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/kernel_times.h"
#include "core/strtab.h"
#include "core/trace.h"

static cp_event region(const char *kernel, uint64_t launch_ns, uint64_t start, uint64_t end) {
  uint32_t g = 0;
  cr_assert_eq(cp_strtab_intern(kernel, strlen(kernel), &g), 0);
  return (cp_event){.kind = CP_EVENT_REGION, .start_ns = start, .end_ns = end, .u.region = {.launch_ns = launch_ns, .kernel_name = g}};
}

Test(core_kernel_times, regions_move_to_their_cupti_kernel) {
  /* two launches of ktA (host times 1000 and 5000, CUPTI starts 9000 and
   * 12000) and one of ktB in between */
  cp_ktimes_put("ktA", 1000, 9000, 9800);
  cp_ktimes_put("ktB", 3000, 11000, 11500);
  cp_ktimes_put("ktA", 5000, 12000, 12900);
  /* the hook registers a launch just after the driver call CUPTI saw */
  cp_event e = region("ktA", 1010, 1010 + 30, 1010 + 400);
  cp_event_align(&e);
  cr_assert_eq(e.start_ns, 9000 + 30);
  cr_assert_eq(e.end_ns, 9000 + 400);
  cr_assert_eq(e.u.region.launch_ns, 0);
  e = region("ktA", 5002, 5002 + 7, 5002 + 8);
  cp_event_align(&e);
  cr_assert_eq(e.start_ns, 12000 + 7);
  e = region("ktB", 3001, 3001, 3002);
  cp_event_align(&e);
  cr_assert_eq(e.start_ns, 11000);
}

Test(core_kernel_times, unmatched_regions_stay) {
  cp_ktimes_put("ktC", 100, 5000, 6000);
  /* a launch before any CUPTI record of its kernel, another kernel's name,
   * and one long after the record: no match, times kept */
  cp_event e = region("ktC", 50, 60, 70);
  cp_event_align(&e);
  cr_assert_eq(e.start_ns, 60);
  cr_assert_eq(e.u.region.launch_ns, 0);
  e = region("ktD", 200, 210, 220);
  cp_event_align(&e);
  cr_assert_eq(e.start_ns, 210);
  e = region("ktC", 100 + CP_KTIMES_MAX_GAP_NS + 1, 7, 8);
  cp_event_align(&e);
  cr_assert_eq(e.start_ns, 7);
  /* scopes and kernels are left alone */
  cp_event k = {.kind = CP_EVENT_KERNEL, .start_ns = 1, .end_ns = 2, .u.kernel.launch_ns = 100};
  cp_event_align(&k);
  cr_assert_eq(k.u.kernel.launch_ns, 100);
  cr_assert_eq(k.start_ns, 1);
}

/* cp_trace_each hands writers the aligned copy. */
static int first_start(void *user, const cp_event *e) {
  *(uint64_t *)user = e->start_ns;
  return 1;
}

Test(core_kernel_times, trace_each_aligns) {
  cp_ktimes_put("ktE", 40000, 90000, 99000);
  cp_trace *t = cp_trace_new();
  cp_event e = region("ktE", 40001, 40011, 40021);
  cr_assert_eq(cp_trace_append(t, &e), 0);
  uint64_t got = 0;
  cp_trace_each(t, first_start, &got);
  cr_assert_eq(got, 90010);
  cp_trace_free(t);
}
