/* trace_race.c -- the trace store read while another thread appends and
 * spills (issue 24.5): cp_trace_each against cp_trace_append across the
 * spill of full buffers, then the same through the public API: a trace
 * session's Chrome and Perfetto payloads (cproton_session_data) and its
 * finalize while a thread still exits scopes. A plain program run under
 * ThreadSanitizer by `make tsan` (halt_on_error: a race fails it); every
 * build checks that a reader sees each event once, in append order.
 * Exit status 0 = pass. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace.h"
#include "cproton/cproton.h"

/* Past two spill buffers (65,536 events each), so appends spill while
 * readers read. */
enum { N_EVENTS = 200000, N_READS = 6, N_SCOPE_ROUNDS = 4 };

static int failures;

static void fail(const char *what) {
  __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  fprintf(stderr, "trace_race: %s (%s)\n", what, cproton_last_error());
}

static int appending;

/* Event i: scopes and kernels in turn, only the header and the live
 * payload set. A kernel's payload is smaller than the union, whose other
 * bytes (and the header's reserved ones) stay uninitialized here:
 * cp_trace_append must store zeros there, or the spill file's write gets
 * uninitialized bytes (`make msan` runs this test). */
static void make_event(uint64_t i, cp_event *e) {
  e->kind = i % 2 ? CP_EVENT_KERNEL : CP_EVENT_SCOPE;
  e->start_ns = i, e->end_ns = i + 1, e->name = 0, e->node = 0;
  if (i % 2)
    e->u.kernel = (cp_event_kernel){.stream = 1, .correlation = (uint32_t)i};
  else
    e->u.scope = (cp_event_scope){.thread = 1};
}

static void *appender(void *arg) {
  cp_trace *t = arg;
  for (uint64_t i = 0; i < N_EVENTS; i++) {
    cp_event e;
    make_event(i, &e);
    if (cp_trace_append(t, &e))
      fail("append");
  }
  __atomic_store_n(&appending, 0, __ATOMIC_RELEASE);
  return NULL;
}

typedef struct seen {
  uint64_t next;
  int out_of_order;
} seen;

static int check_order(void *user, const cp_event *e) {
  seen *s = user;
  if (e->start_ns != s->next || e->end_ns != s->next + 1)
    s->out_of_order = 1;
  s->next++;
  return s->out_of_order;
}

/* Each read sees a prefix of the appends: 0, 1, 2, ... with no gap. */
static void read_store(cp_trace *t) {
  seen s = {0};
  if (cp_trace_each(t, check_order, &s) && s.out_of_order)
    fail("a reader saw events out of append order");
}

static void store_part(const char *dir) {
  cp_trace *t = cp_trace_new();
  if (!t || cp_trace_set_spill_dir(t, dir)) {
    fail("trace_new");
    return;
  }
  pthread_t th;
  __atomic_store_n(&appending, 1, __ATOMIC_RELEASE);
  pthread_create(&th, NULL, appender, t);
  int reads = 0;
  while (__atomic_load_n(&appending, __ATOMIC_ACQUIRE) || reads < N_READS) {
    read_store(t); /* reads for as long as the appends go on */
    reads++;
  }
  pthread_join(th, NULL);
  seen s = {0};
  if (cp_trace_each(t, check_order, &s) || s.next != N_EVENTS)
    fail("after the appends every event is read once");
  if (cp_trace_count(t) != N_EVENTS || cp_trace_spilled(t) == 0 || cp_trace_dropped(t))
    fail("counts: every event held, some spilled, none dropped");
  cp_trace_free(t);
}

static int stop;

/* Late scope exits: keeps tracing scopes until told to stop. */
static void *scoper(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    uint64_t id;
    if (cproton_scope_enter("late", &id) == CPROTON_OK)
      cproton_scope_exit("late");
  }
  return NULL;
}

static void api_part(const char *dir) {
  for (int round = 0; round < N_SCOPE_ROUNDS; round++) {
    cproton_session_options o;
    cproton_session_options_init(&o);
    char path[512];
    snprintf(path, sizeof path, "%s/trace_race_%d", dir, round);
    o.name = path;
    o.backend = "none";
    o.data = "trace";
    int sid;
    if (cproton_session_start(&o, &sid)) {
      fail("session_start");
      return;
    }
    __atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
    pthread_t th;
    pthread_create(&th, NULL, scoper, NULL);
    static const char *const formats[] = {"chrome_trace", "perfetto"};
    for (int i = 0; i < N_READS; i++) {
      char *buf = NULL;
      size_t n = 0;
      if (cproton_session_data(sid, -1, formats[i % 2], &buf, &n) || n == 0)
        fail("session_data");
      cproton_free(buf);
    }
    if (cproton_session_finalize(sid, NULL)) /* the scoper still runs */
      fail("session_finalize");
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
  }
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  store_part(dir);
  api_part(dir);
  printf("trace_race: %d failures\n", failures);
  return failures != 0;
}
