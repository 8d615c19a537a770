/* core_trace_test.c -- the trace event store: append order, the spill file
 * that keeps memory bounded, clearing and reuse. */
#include <criterion/criterion.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/trace.h"
#include "testutil.h"

typedef struct seen {
  size_t n;
  int in_order;
} seen;

static int check(void *user, const cp_event *e) {
  seen *s = user;
  if (e->start_ns != s->n || e->name != (uint32_t)(s->n % 977))
    s->in_order = 0;
  s->n++;
  return 0;
}

static size_t fill(cp_trace *t, size_t n) {
  size_t ok = 0;
  for (size_t i = 0; i < n; i++) {
    cp_event e = {.kind = CP_EVENT_SCOPE, .start_ns = i, .end_ns = i + 1,
                  .name = (uint32_t)(i % 977)};
    ok += cp_trace_append(t, &e) == 0;
  }
  return ok;
}

Test(core_trace, spills_past_one_buffer_and_reads_back_in_order) {
  const char *dir = cpt_tmp_path("spill");
  mkdir(dir, 0700);
  cp_trace *t = cp_trace_new();
  cr_assert_eq(cp_trace_set_spill_dir(t, dir), 0);
  cr_assert_eq(fill(t, 200000), 200000);
  cr_assert_eq(cp_trace_count(t), 200000);
  cr_assert_eq(cp_trace_dropped(t), 0);
  cr_assert_geq(cp_trace_spilled(t), 131072, "3 full buffers of 65536 on disk");
  seen s = {0, 1};
  cr_assert_eq(cp_trace_each(t, check, &s), 0);
  cr_assert_eq(s.n, 200000);
  cr_assert(s.in_order);
  cp_trace_clear(t); /* the spill file is truncated and reused */
  cr_assert_eq(cp_trace_count(t), 0);
  cr_assert_eq(cp_trace_spilled(t), 0);
  cr_assert_eq(fill(t, 70000), 70000);
  s = (seen){0, 1};
  cr_assert_eq(cp_trace_each(t, check, &s), 0);
  cr_assert_eq(s.n, 70000);
  cr_assert(s.in_order);
  cp_trace_free(t);
}

static int stop_at_10(void *user, const cp_event *e) {
  (void)e;
  return ++*(int *)user == 10 ? 7 : 0;
}

Test(core_trace, each_stops_at_a_callback_result) {
  cp_trace *t = cp_trace_new();
  fill(t, 100);
  int n = 0;
  cr_assert_eq(cp_trace_each(t, stop_at_10, &n), 7);
  cr_assert_eq(n, 10);
  cp_trace_free(t);
  cp_trace_free(NULL);
}

static long max_rss_kib(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

Test(core_trace, memory_stays_flat_while_events_spill) {
  const char *dir = cpt_tmp_path("spill_rss");
  mkdir(dir, 0700);
  cp_trace *t = cp_trace_new();
  cp_trace_set_spill_dir(t, dir);
  fill(t, 70000); /* the first buffer and the spill file exist */
  long before = max_rss_kib();
  cr_assert_eq(fill(t, 2000000), 2000000); /* 107 MiB of records */
  long grown = max_rss_kib() - before;
  cr_assert_lt(grown, 16 * 1024, "RSS grew %ld KiB for 2M events", grown);
  cr_assert_eq(cp_trace_count(t), 2070000);
  cp_trace_free(t);
}

static int keep_last(void *user, const cp_event *e) {
  *(cp_event *)user = *e;
  return 0;
}

/* An event keeps its header and its kind's payload; whatever the caller's
 * struct held in the rest of the union (an initializer of a smaller member
 * leaves it indeterminate) is stored as zeros, so spill files hold no
 * uninitialized bytes (MSan) and the payloads stay named per kind. */
Test(core_trace, stores_only_the_live_payload) {
  const struct {
    uint8_t kind;
    size_t size;
  } kinds[] = {{CP_EVENT_SCOPE, sizeof(cp_event_scope)},
               {CP_EVENT_KERNEL, sizeof(cp_event_kernel)},
               {CP_EVENT_COUNTER, sizeof(cp_event_counter)}};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    cp_trace *t = cp_trace_new();
    cp_event e, got;
    memset(&e, 0xab, sizeof e);
    e.kind = kinds[k].kind;
    e.start_ns = 5, e.end_ns = 9, e.name = 3, e.node = 4;
    memset(&e.u, 0x11, kinds[k].size); /* the live payload */
    cr_assert_eq(cp_trace_append(t, &e), CPROTON_OK);
    cr_assert_eq(cp_trace_each(t, keep_last, &got), 0);
    cr_assert_eq(got.kind, kinds[k].kind);
    cr_assert(got.start_ns == 5 && got.end_ns == 9 && got.name == 3 &&
              got.node == 4);
    for (size_t i = 0; i < sizeof got.reserved; i++)
      cr_assert_eq(got.reserved[i], 0, "header byte %zu", i);
    const uint8_t *u = (const uint8_t *)&got.u;
    for (size_t i = 0; i < sizeof got.u; i++)
      cr_assert_eq(u[i], i < kinds[k].size ? 0x11 : 0,
                   "kind %u, payload byte %zu", kinds[k].kind, i);
    cp_trace_free(t);
  }
}
