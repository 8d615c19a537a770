/* cupti_lazy_race.c -- lazy launch callbacks (backend/cupti/lazy.c) under
 * racing threads, as a plain program for ThreadSanitizer (`make tsan`):
 * scopeless threads launch through a fake driver (next correlation id, the
 * callback only while enabled, a kernel record either way) while the main
 * thread enters and exits scopes, which switches the callbacks back on;
 * another thread enters a scope of its own now and then. Records are
 * processed concurrently on a records thread, in adaptive mode (batches of
 * 8, backend/cupti/adaptive.c) flushed by the main thread now and then.
 * Every kernel must be delivered exactly once, and every launch whose enter
 * callback ran must get its exit callback (lazy mode switches off only at
 * an exit, with no other launch between the two). Exit status 0 = pass. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/adaptive.h"
#include "backend/cupti/callbacks.h"
#include "backend/cupti/lazy.h"
#include "backend/cupti/records.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "cupti_synth.h"

enum { N_LAUNCHERS = 3, MAX_RECS = 1 << 17, CHUNK = 128 };
#define CBID CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel

typedef CUpti_ActivityKernel10 krec;

static cp_cupti_state st;
static krec recs[MAX_RECS];
static _Atomic size_t n_recs;     /* slots taken */
static atomic_int ready[MAX_RECS]; /* slot written */
static atomic_uint next_id;
static atomic_int cb_off, stop;
static atomic_int lost_exits; /* enter delivered, exit not: must stay 0 */

static int toggle(uint32_t cbid, int on) {
  (void)cbid;
  atomic_store(&cb_off, !on);
  return 0;
}

static int describe(uint32_t id, cp_device_info *d) {
  (void)id;
  (void)d;
  return 0;
}

static int launch(void) {
  uint32_t id = atomic_fetch_add(&next_id, 1) + 1;
  if (!atomic_load(&cb_off)) {
    CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                            .correlationId = id};
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, CBID, &d);
    d.callbackSite = CUPTI_API_EXIT; /* lazy mode switches off here */
    if (!atomic_load(&cb_off))
      cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, CBID, &d);
    else
      atomic_fetch_add(&lost_exits, 1);
  }
  size_t i = atomic_fetch_add(&n_recs, 1);
  if (i >= MAX_RECS)
    return 0;
  memset(&recs[i], 0, sizeof recs[i]);
  recs[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  recs[i].name = "k";
  recs[i].correlationId = id;
  recs[i].start = 10ull * id;
  recs[i].end = recs[i].start + 1;
  atomic_store(&ready[i], 1);
  return 1;
}

static void *launcher(void *arg) {
  while (!atomic_load(&stop) && launch())
    ;
  return arg;
}

static void *own_scopes(void *arg) {
  while (!atomic_load(&stop)) {
    cproton_scope_enter("own", NULL);
    for (int i = 0; i < 5; i++)
      launch();
    cproton_scope_exit("own");
  }
  return arg;
}

static size_t done; /* records processed (records thread only) */

static void process_ready(size_t limit) {
  while (done < limit && done < MAX_RECS) {
    size_t n = 0;
    while (n < CHUNK && done + n < limit && atomic_load(&ready[done + n]))
      n++;
    if (!n)
      return;
    cp_records_process(&st, (uint8_t *)&recs[done], n * sizeof(krec), cpt_next_kernel);
    done += n;
  }
}

static void *records(void *arg) {
  while (!atomic_load(&stop))
    process_ready(atomic_load(&n_recs));
  return arg;
}

int main(int argc, char **argv) {
  char path[512];
  snprintf(path, sizeof path, "%s/cupti_lazy_race", argc > 1 ? argv[1] : ".");
  memset(&st, 0, sizeof st);
  st.corr = cp_corr_new(1u << 16);
  st.graphs = cp_graph_new(64, 64);
  st.hooks.launch_callbacks = toggle;
  st.hooks.describe_device = describe;
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = path;
  o.backend = "none";
  int sid;
  if (cproton_session_start(&o, &sid) || cp_lazy_start(&st) ||
      cp_adaptive_new(8, &st.adaptive)) {
    fprintf(stderr, "cupti_lazy_race: start: %s\n", cproton_last_error());
    return 1;
  }
  pthread_t t[N_LAUNCHERS + 2];
  for (int i = 0; i < N_LAUNCHERS; i++)
    pthread_create(&t[i], NULL, launcher, NULL);
  pthread_create(&t[N_LAUNCHERS], NULL, own_scopes, NULL);
  pthread_create(&t[N_LAUNCHERS + 1], NULL, records, NULL);
  for (int i = 0; i < 2000 && atomic_load(&n_recs) < MAX_RECS / 2; i++) {
    cproton_scope_enter(i % 2 ? "odd" : "even", NULL);
    for (int j = 0; j < 10; j++)
      launch();
    cproton_scope_exit(i % 2 ? "odd" : "even");
    if (i % 100 == 99)
      cp_adaptive_flush(st.adaptive); /* races the records thread's batches */
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < N_LAUNCHERS + 2; i++)
    pthread_join(t[i], NULL);
  size_t made = atomic_load(&n_recs);
  made = made < MAX_RECS ? made : MAX_RECS;
  process_ready(made);
  int frc = cp_adaptive_flush(st.adaptive);
  uint64_t batched, batches;
  cp_adaptive_counts(st.adaptive, &batched, &batches);
  cp_adaptive_free(st.adaptive);
  unsigned long long got = atomic_load(&st.stats.kernels);
  unsigned long long ranges = atomic_load(&st.stats.lazy_ranges);
  cp_lazy_stop(&st);
  int rc = cproton_session_finalize(sid, NULL);
  cp_corr_free(st.corr);
  cp_graph_free(st.graphs);
  int lost = atomic_load(&lost_exits);
  if (rc || frc || got != made || done != made || lost) {
    fprintf(stderr, "cupti_lazy_race: %llu kernels delivered of %zu (%zu "
            "processed), finalize %d, %d exit callbacks lost\n", got, made,
            done, rc, lost);
    return 1;
  }
  printf("cupti_lazy_race: %zu kernels, %llu lazy ranges, %llu records in "
         "%llu adaptive batches\n", made, ranges, (unsigned long long)batched,
         (unsigned long long)batches);
  return 0;
}
