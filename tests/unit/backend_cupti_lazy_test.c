/* backend_cupti_lazy_test.c -- lazy launch callbacks (backend/cupti/lazy.c)
 * against a fake driver that behaves as CUPTI does: every launch takes the
 * next correlation id, calls the launch callback only while it is enabled,
 * the exit callback only if still enabled at the exit, and produces a kernel
 * record carrying the id either way; like the H100's CUPTI, a launch whose
 * exit callback was dropped leaves its thread on its id for good (fed with
 * the old lazy.c, the eager loop below prints the H100 run's log lines and
 * misplaces the same kernels; docs/cupti.md). Each scenario
 * runs with callbacks on every launch and in lazy mode; the profiles must
 * hold the same kernels at the same places, and lazy mode must actually
 * have skipped callbacks. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/callbacks.h"
#include "backend/cupti/lazy.h"
#include "backend/cupti/records.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "cupti_synth.h"
#include "testutil.h"

typedef CUpti_ActivityKernel10 krec;

#define MAX_RECS 200000
#define CBID CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
#define CBID_EX CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx

static cp_cupti_state st;
static krec *recs;
static atomic_size_t n_recs;
static atomic_uint next_id;
static atomic_int cb_on[1024]; /* 0: enabled (the default), 1: disabled */
static atomic_ullong n_callbacks, n_toggles;
static atomic_int n_lost_exits; /* enter callbacks without their exit */

static int fake_describe(uint32_t id, cp_device_info *d) {
  (void)id;
  snprintf(d->arch, sizeof d->arch, "90");
  return 0;
}

static int fake_toggle(uint32_t cbid, int on) {
  cr_assert_lt(cbid, 1024);
  atomic_store(&cb_on[cbid], !on);
  atomic_fetch_add(&n_toggles, 1);
  return 0;
}

/* Launches with callbacks off take ids from here instead (0: in order):
 * a driver that does not number launches in launch order. */
static atomic_uint off_ids;

/* The H100's CUPTI (docs/cupti.md, "Switching off inside a launch"): a
 * launch whose enter callback ran but whose exit callback was switched off
 * stays open on its thread, and every later API call of that thread,
 * callbacks on or off, takes its id instead of a new one. The default mode
 * never switches, so it never trips this. */
static _Thread_local uint32_t open_frame;

/* The fake driver: every API call takes the next id (launches and the
 * others: copies, event records, on any thread). */
static uint32_t drv_take_id(void) {
  if (open_frame)
    return open_frame;
  return atomic_fetch_add(&next_id, 1) + 1;
}

/* The callbacks of a launch `id` that CUPTI decided to call back: enter,
 * then exit if still enabled at the exit (checked before calling it). */
static void drv_callbacks(CUpti_CallbackId cbid, uint32_t id) {
  atomic_fetch_add(&n_callbacks, 1);
  CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                          .functionName = "cuLaunchKernel",
                          .correlationId = id};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
  d.callbackSite = CUPTI_API_EXIT;
  if (!atomic_load(&cb_on[cbid]))
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
  else if (atomic_fetch_add(&n_lost_exits, 1), !open_frame)
    open_frame = id; /* the exit was dropped: the frame stays open */
}

/* The kernel record of launch `id`. */
static void drv_record(uint32_t id, const char *name) {
  size_t i = atomic_fetch_add(&n_recs, 1);
  cr_assert_lt(i, MAX_RECS);
  krec *k = &recs[i];
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = name;
  k->correlationId = id;
  k->start = 1000 + 10ull * id;
  k->end = k->start + 5;
}

/* The rest of a launch that took `id`: the callbacks if enabled (checked
 * after the id: the order that exposes races), then the record. */
static void drv_finish(CUpti_CallbackId cbid, uint32_t id, const char *name) {
  if (!atomic_load(&cb_on[cbid]))
    drv_callbacks(cbid, id);
  else if (atomic_load(&off_ids))
    id = atomic_fetch_add(&off_ids, 1);
  drv_record(id, name);
}

static void drv_launch(CUpti_CallbackId cbid, const char *name) {
  drv_finish(cbid, drv_take_id(), name);
}

/* Delivers the records made so far, in buffers of 256 as CUPTI would. */
static void drain(void) {
  size_t n = atomic_load(&n_recs);
  for (size_t i = 0; i < n; i += 256) {
    size_t m = n - i < 256 ? n - i : 256;
    cp_records_process(&st, (uint8_t *)&recs[i], m * sizeof(krec), cpt_next_kernel);
  }
  atomic_store(&n_recs, 0);
}

static void setup(void) {
  cp_session_reset_all();
  memset(&st, 0, sizeof st);
  st.corr = cp_corr_new(1u << 16);
  st.graphs = cp_graph_new(1024, 1024);
  st.hooks.launch_callbacks = fake_toggle;
  st.hooks.describe_device = fake_describe;
  recs = calloc(MAX_RECS, sizeof *recs);
  atomic_store(&n_recs, 0);
  atomic_store(&next_id, 0);
  for (int i = 0; i < 1024; i++)
    atomic_store(&cb_on[i], 0);
  atomic_store(&n_callbacks, 0);
  atomic_store(&n_toggles, 0);
  atomic_store(&n_lost_exits, 0);
  atomic_store(&off_ids, 0);
  open_frame = 0;
}

static void teardown(void) {
  cp_lazy_stop(&st);
  cp_corr_free(st.corr);
  cp_graph_free(st.graphs);
  free(recs);
}

static int start(const char *name, int lazy) {
  int sid = cpt_start_session(name, "none", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  if (lazy)
    cr_assert_eq(cp_lazy_start(&st), CPROTON_OK);
  return sid;
}

static json_t *finish(int sid, const char *path) {
  drain();
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  cp_lazy_stop(&st);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j);
  return j;
}

static char *sorted_tree(json_t *profile) {
  return cpt_profile_lines(profile, 0);
}

/* ---- scenarios ------------------------------------------------------------- */

static void *scopeless_worker(void *arg) {
  for (int i = 0; i < 30; i++)
    drv_launch(CBID_EX, "worker_k");
  return arg;
}

/* One thread with nested scopes, a scopeless thread following it, ops and
 * states, a second launch entry point. */
static void single_context_scenario(void) {
  for (int i = 0; i < 10; i++)
    drv_launch(CBID, "root_k");
  cproton_scope_enter("a", NULL);
  for (int i = 0; i < 20; i++)
    drv_launch(CBID, "k1");
  pthread_t t;
  pthread_create(&t, NULL, scopeless_worker, NULL);
  pthread_join(t, NULL);
  cproton_scope_enter("b", NULL);
  for (int i = 0; i < 7; i++)
    drv_launch(CBID, "k2");
  cproton_op_enter("op");
  for (int i = 0; i < 6; i++)
    drv_launch(CBID, "k3");
  cproton_op_exit();
  cproton_state_enter("st");
  for (int i = 0; i < 6; i++)
    drv_launch(CBID, "k4");
  cproton_state_exit();
  cproton_scope_exit("b");
  for (int i = 0; i < 5; i++)
    drv_launch(CBID, "k1");
  drain(); /* some records arrive while later launches are running */
  cproton_scope_exit("a");
  for (int i = 0; i < 3; i++)
    drv_launch(CBID, "root_k");
}

static char *run(void (*scenario)(void), int lazy, const char *name) {
  const char *path = cpt_tmp_path(name);
  int sid = start(path, lazy);
  scenario();
  json_t *p = finish(sid, path);
  char *tree = sorted_tree(p);
  json_decref(p);
  return tree;
}

Test(backend_cupti_lazy, same_profile_as_a_callback_per_launch, .init = setup,
     .fini = teardown) {
  char *eager = run(single_context_scenario, 0, "lazy_eager");
  unsigned long long eager_cb = atomic_load(&n_callbacks);
  atomic_store(&n_callbacks, 0);
  char *lazy = run(single_context_scenario, 1, "lazy_lazy");
  unsigned long long lazy_cb = atomic_load(&n_callbacks);
  cr_assert_str_eq(lazy, eager);
  cr_assert(strstr(eager, "/a/worker_k=30\n"), "%s", eager);
  cr_assert(strstr(eager, "/a/b/op=6\n"), "%s", eager);
  cr_assert(strstr(eager, "/a/b/st/k4=6\n"), "%s", eager);
  cr_assert(strstr(eager, "/ROOT/root_k=13\n") || strstr(eager, "/root_k=13\n"),
            "%s", eager);
  cr_assert_eq(eager_cb, 87);
  cr_assert_lt(lazy_cb, eager_cb / 2, "lazy mode made %llu callbacks",
               lazy_cb);
  cr_assert_gt(atomic_load(&st.stats.lazy_records), 0);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  free(eager);
  free(lazy);
}

/* A thread with scopes of its own launches under them while the main thread
 * launches under its own: the sites differ, so callbacks must stay on. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int phase;

static void wait_phase(int p) {
  pthread_mutex_lock(&gate);
  while (phase < p)
    pthread_cond_wait(&cond, &gate);
  pthread_mutex_unlock(&gate);
}

static void set_phase(int p) {
  pthread_mutex_lock(&gate);
  phase = p;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&gate);
}

static void *own_scope_worker(void *arg) {
  cproton_scope_enter("w", NULL);
  set_phase(1);
  wait_phase(2);
  for (int i = 0; i < 25; i++)
    drv_launch(CBID, "wk");
  cproton_scope_exit("w");
  return arg;
}

static void two_contexts_scenario(void) {
  phase = 0;
  cproton_scope_enter("m", NULL);
  pthread_t t;
  pthread_create(&t, NULL, own_scope_worker, NULL);
  wait_phase(1);
  for (int i = 0; i < 25; i++)
    drv_launch(CBID, "mk");
  set_phase(2);
  pthread_join(t, NULL);
  for (int i = 0; i < 25; i++)
    drv_launch(CBID, "mk");
  cproton_scope_exit("m");
}

Test(backend_cupti_lazy, a_thread_with_its_own_scopes_keeps_callbacks_on,
     .init = setup, .fini = teardown) {
  char *eager = run(two_contexts_scenario, 0, "lazy2_eager");
  char *lazy = run(two_contexts_scenario, 1, "lazy2_lazy");
  cr_assert_str_eq(lazy, eager);
  cr_assert(strstr(eager, "/w/wk=25\n"), "%s", eager);
  cr_assert(strstr(eager, "/m/mk=50\n"), "%s", eager);
  /* after the worker's exit the main thread's context is alone again */
  cr_assert_gt(atomic_load(&st.stats.lazy_ranges), 0);
  free(eager);
  free(lazy);
}

/* A training loop: forward and optimizer launch on the main thread, the
 * backward pass on a scopeless thread (PyTorch's autograd thread) while the
 * main thread waits inside its "backward" scope; records are processed
 * while later steps run. Callbacks go off in every phase of every step. */
static void *backward_thread(void *arg) {
  for (int i = 0; i < 40; i++)
    drv_launch(i % 3 ? CBID : CBID_EX, "bwd");
  return arg;
}

static void training_scenario(void) {
  for (int step = 0; step < 50; step++) {
    cproton_scope_enter("forward", NULL);
    for (int i = 0; i < 40; i++)
      drv_launch(i % 2 ? CBID : CBID_EX, "fwd");
    cproton_scope_exit("forward");
    cproton_scope_enter("backward", NULL);
    pthread_t t;
    pthread_create(&t, NULL, backward_thread, NULL);
    pthread_join(t, NULL);
    cproton_scope_exit("backward");
    cproton_scope_enter("optimizer", NULL);
    for (int i = 0; i < 10; i++)
      drv_launch(CBID, "opt");
    cproton_scope_exit("optimizer");
    if (step % 7 == 0)
      drain();
  }
}

Test(backend_cupti_lazy, training_loop_with_an_autograd_thread, .init = setup,
     .fini = teardown) {
  char *eager = run(training_scenario, 0, "lazy4_eager");
  atomic_store(&n_callbacks, 0);
  char *lazy = run(training_scenario, 1, "lazy4_lazy");
  cr_assert_str_eq(lazy, eager);
  cr_assert(strstr(eager, "/backward/bwd=2000\n"), "%s", eager);
  cr_assert_geq(atomic_load(&st.stats.lazy_ranges), 150, "%llu",
                (unsigned long long)atomic_load(&st.stats.lazy_ranges));
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  cr_assert_lt(atomic_load(&n_callbacks), 50 * 15);
  free(eager);
  free(lazy);
}

/* Session phases and a second session starting change every site. */
static void sessions_scenario(void) {
  cproton_scope_enter("s", NULL);
  for (int i = 0; i < 12; i++)
    drv_launch(CBID, "k");
  cproton_session_deactivate(CPROTON_ALL_SESSIONS);
  for (int i = 0; i < 12; i++)
    drv_launch(CBID, "skipped");
  cproton_session_activate(CPROTON_ALL_SESSIONS);
  for (int i = 0; i < 12; i++)
    drv_launch(CBID, "k");
  cproton_scope_exit("s");
}

Test(backend_cupti_lazy, deactivation_is_a_change, .init = setup,
     .fini = teardown) {
  char *eager = run(sessions_scenario, 0, "lazy3_eager");
  char *lazy = run(sessions_scenario, 1, "lazy3_lazy");
  cr_assert_str_eq(lazy, eager);
  cr_assert(strstr(eager, "/s/k=24\n"), "%s", eager);
  cr_assert_null(strstr(eager, "skipped"), "%s", eager);
  free(eager);
  free(lazy);
}

/* Scopeless threads launch while the main thread enters and exits scopes:
 * every kernel is counted once (sites of launches racing a change are
 * either side's, in both modes). Run under TSan by `make tsan`. */
static atomic_int stop_workers;

/* Stops at half the records, so that the main thread's 3,000 always fit
 * however the threads are scheduled. */
static void *racing_worker(void *arg) {
  while (!atomic_load(&stop_workers) && atomic_load(&n_recs) < MAX_RECS / 2)
    drv_launch(CBID, "rk");
  return arg;
}

static long long sum_counts(const char *tree, const char *kernel) {
  long long total = 0;
  char key[64];
  snprintf(key, sizeof key, "/%s=", kernel);
  for (const char *p = strstr(tree, key); p; p = strstr(p + 1, key))
    total += atoll(p + strlen(key));
  return total;
}

Test(backend_cupti_lazy, racing_threads_lose_no_kernel, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("lazy_race");
  int sid = start(path, 1);
  atomic_store(&stop_workers, 0);
  pthread_t t[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&t[i], NULL, racing_worker, NULL);
  for (int i = 0; i < 300; i++) {
    cproton_scope_enter(i % 2 ? "odd" : "even", NULL);
    for (int j = 0; j < 10; j++)
      drv_launch(CBID, "mk");
    cproton_scope_exit(i % 2 ? "odd" : "even");
  }
  atomic_store(&stop_workers, 1);
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  unsigned launched = atomic_load(&next_id);
  json_t *p = finish(sid, path);
  char *tree = sorted_tree(p);
  json_decref(p);
  long long rk = sum_counts(tree, "rk"), mk = sum_counts(tree, "mk");
  cr_assert_eq((unsigned long long)(rk + mk), launched, "%s", tree);
  cr_assert_eq(sum_counts(tree, "mk"), 3000);
  free(tree);
}

/* ---- the driver's id order (docs/cupti.md, "What the driver may reorder") -- */

/* Runs `scenario` with a callback per launch and in lazy mode: the same
 * profile, nothing unattributed, lazy mode not suspended. The first
 * profile, to free. */
static char *same_in_both(void (*scenario)(void), const char *name) {
  char eager_name[64], lazy_name[64];
  snprintf(eager_name, sizeof eager_name, "%s_eager", name);
  snprintf(lazy_name, sizeof lazy_name, "%s_lazy", name);
  char *eager = run(scenario, 0, eager_name);
  atomic_store(&n_callbacks, 0);
  char *lazy = run(scenario, 1, lazy_name);
  cr_assert_str_eq(lazy, eager);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  cr_assert_eq(atomic_load(&st.stats.lazy_suspended), 0);
  cr_assert_eq(atomic_load(&n_lost_exits), 0);
  free(lazy);
  return eager;
}

/* Other API calls take ids too, on the launching thread and on a copy
 * thread running beside it: the ranges have holes. (The copier stops after
 * 30,000 ids: the correlation ring is indexed by id, so more than 65,536
 * ids between a launch and its record would alias slots in both modes.) */
static atomic_int stop_copier;

static void *copier(void *arg) {
  for (int i = 0; i < 30000 && !atomic_load(&stop_copier); i++) {
    drv_take_id();
    sched_yield();
  }
  return arg;
}

static void api_calls_scenario(void) {
  atomic_store(&stop_copier, 0);
  pthread_t c;
  pthread_create(&c, NULL, copier, NULL);
  for (int step = 0; step < 20; step++) {
    cproton_scope_enter("forward", NULL);
    for (int i = 0; i < 30; i++) {
      drv_launch(CBID, "fwd");
      if (i % 3 == 0)
        drv_take_id(); /* cudaMemcpyAsync, cudaEventRecord, ... */
    }
    cproton_scope_exit("forward");
    cproton_scope_enter("backward", NULL);
    pthread_t b;
    pthread_create(&b, NULL, backward_thread, NULL);
    pthread_join(b, NULL);
    cproton_scope_exit("backward");
  }
  atomic_store(&stop_copier, 1);
  pthread_join(c, NULL);
}

Test(backend_cupti_lazy, ids_taken_by_other_api_calls_and_threads,
     .init = setup, .fini = teardown) {
  char *eager = same_in_both(api_calls_scenario, "lazy5");
  cr_assert(strstr(eager, "/forward/fwd=600\n"), "%s", eager);
  cr_assert(strstr(eager, "/backward/bwd=800\n"), "%s", eager);
  cr_assert_geq(atomic_load(&st.stats.lazy_ranges), 40);
  free(eager);
}

/* A scopeless thread's launch takes its id, then stalls before CUPTI's
 * callback check while the main thread launches with callbacks off and
 * changes scope (callbacks back on): the stalled launch is then captured
 * with an id below those of the launches made while off. Its capture must
 * not end the range (it is not fresh); the main thread's next one does. */

/* A launch of kernel `arg` that takes its id (phase 1), then stalls before
 * the callback check until phase 2; phase 3 once it is done. */
static void *stalled_launcher(void *arg) {
  uint32_t id = drv_take_id();
  set_phase(1);
  wait_phase(2);
  drv_finish(CBID, id, arg);
  set_phase(3);
  return NULL;
}

static void reenable_race_scenario(void) {
  phase = 0;
  cproton_scope_enter("a", NULL);
  for (int i = 0; i < 6; i++)
    drv_launch(CBID, "ka"); /* lazy: callbacks off after the 4th */
  pthread_t t;
  pthread_create(&t, NULL, stalled_launcher, "held");
  wait_phase(1);
  for (int i = 0; i < 10; i++)
    drv_launch(CBID, "ka"); /* ids above the held launch's */
  cproton_scope_enter("b", NULL); /* callbacks back on */
  set_phase(2);
  wait_phase(3);
  pthread_join(t, NULL);
  for (int i = 0; i < 5; i++)
    drv_launch(CBID, "kb");
  cproton_scope_exit("b");
  cproton_scope_exit("a");
}

Test(backend_cupti_lazy, a_launch_in_flight_across_the_re_enable,
     .init = setup, .fini = teardown) {
  char *eager = same_in_both(reenable_race_scenario, "lazy6");
  cr_assert(strstr(eager, "/a/ka=16\n"), "%s", eager);
  cr_assert(strstr(eager, "/a/b/held=1\n"), "%s", eager);
  cr_assert_geq(atomic_load(&st.stats.lazy_records), 10);
  free(eager);
}

/* A scopeless thread's launch takes its id just before the main thread's
 * captures switch the callbacks off and reaches the check after: no
 * callback, an id below the disabling capture's. The range starts at the
 * first capture of the stable run, so it holds that id. */
static void held_launch_scenario(void *(*held)(void *), const char *name,
                                 int before, int during) {
  phase = 0;
  cproton_scope_enter("a", NULL);
  for (int i = 0; i < before; i++)
    drv_launch(CBID, "ka");
  pthread_t t;
  pthread_create(&t, NULL, held, (void *)name);
  wait_phase(1);
  for (int i = 0; i < during; i++)
    drv_launch(CBID, "ka");
  set_phase(2);
  wait_phase(3);
  pthread_join(t, NULL);
  cproton_scope_exit("a");
  for (int i = 0; i < 3; i++)
    drv_launch(CBID, "root_k");
}

/* lazy: off after the 2nd launch while the held one waits */
static void switch_off_race_scenario(void) {
  held_launch_scenario(stalled_launcher, "early", 2, 4);
}

Test(backend_cupti_lazy, a_launch_in_flight_across_the_switch_off,
     .init = setup, .fini = teardown) {
  char *eager = same_in_both(switch_off_race_scenario, "lazy7");
  cr_assert(strstr(eager, "/a/early=1\n"), "%s", eager);
  /* 4 captures before the switch, 3 after the scope exit: not the early */
  cr_assert_eq(atomic_load(&n_callbacks), 7);
  free(eager);
}

/* 100 launches in 5 scopes "c", the callbacks counted from 0: with lazy
 * mode suspended, every one is captured. */
static void after_suspension(void) {
  atomic_store(&n_callbacks, 0);
  for (int step = 0; step < 5; step++) {
    cproton_scope_enter("c", NULL);
    for (int i = 0; i < 20; i++)
      drv_launch(CBID, "kc");
    cproton_scope_exit("c");
  }
}

/* A driver that numbers the launches made with callbacks off out of launch
 * order (ids far above every later capture): their records are in no
 * range. They are counted, and lazy mode suspends itself: every later
 * launch is captured, every later record placed exactly. */
static void out_of_order_scenario(void) {
  atomic_store(&off_ids, 1u << 30);
  cproton_scope_enter("a", NULL);
  for (int i = 0; i < 10; i++)
    drv_launch(CBID, "ka"); /* 6 with callbacks off */
  cproton_scope_exit("a");
  for (int i = 0; i < 3; i++)
    drv_launch(CBID, "kr");
  drain(); /* the 6 records are in no range: suspended, callbacks on */
  after_suspension();
}

Test(backend_cupti_lazy, ids_out_of_launch_order_suspend_lazy_mode,
     .init = setup, .fini = teardown) {
  char *lazy = run(out_of_order_scenario, 1, "lazy8_lazy");
  cr_assert(strstr(lazy, "/c/kc=100\n"), "%s", lazy);
  cr_assert_eq(atomic_load(&n_callbacks), 100, "lazy mode went on skipping");
  cr_assert_eq(atomic_load(&st.stats.lazy_ranges), 1);
  cr_assert_eq(atomic_load(&st.stats.lazy_misses), 6);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 6);
  cr_assert_eq(atomic_load(&st.stats.lazy_suspended), 1);
  free(lazy);
}

/* ---- the H100 eager run (docs/cupti.md, "Switching off inside a launch") - */

/* bench/workloads.py's eager loop: forward and optimizer on the main thread,
 * backward on one autograd thread that lives across steps, started by a
 * launch of the main thread inside its "backward" scope; records processed
 * at the end. On a CUPTI that drops the exit callback of a launch whose
 * enter switched the callbacks off, the old lazy mode put every later
 * forward kernel under /optimizer (the ids of a thread stayed at its
 * disabling launch's: 4 on the main thread, 8 on the autograd one). */
enum { EAGER_STEPS = 12, FWD = 45, BWD = 136, OPT = 3 };
static const char *const fwd_names[] = {"gather", "add", "ln", "gemm", "gelu"};
static const char *const bwd_names[] = {"fill", "nll_bwd", "softmax_bwd",
                                        "gemm_nt", "gemm_nn", "ln_bwd"};
static int autograd_req, autograd_done;

static void *autograd_thread(void *arg) {
  for (int step = 0; step < EAGER_STEPS; step++) {
    wait_phase(2 * step + 1);
    for (int i = 0; i < BWD; i++)
      drv_launch(i % 4 ? CBID : CBID_EX, bwd_names[i % 6]);
    pthread_mutex_lock(&gate);
    autograd_done = step + 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&gate);
  }
  return arg;
}

static void eager_loop_scenario(void) {
  phase = 0;
  autograd_req = autograd_done = 0;
  pthread_t t;
  pthread_create(&t, NULL, autograd_thread, NULL);
  for (int step = 0; step < EAGER_STEPS; step++) {
    cproton_scope_enter("forward", NULL);
    for (int i = 0; i < FWD; i++)
      drv_launch(CBID, fwd_names[i % 5]);
    cproton_scope_exit("forward");
    cproton_scope_enter("backward", NULL);
    drv_launch(CBID, "fill_seed"); /* the gradient seed, on the main thread */
    set_phase(2 * step + 1);
    pthread_mutex_lock(&gate);
    while (autograd_done < step + 1)
      pthread_cond_wait(&cond, &gate);
    pthread_mutex_unlock(&gate);
    cproton_scope_exit("backward");
    cproton_scope_enter("optimizer", NULL);
    for (int i = 0; i < OPT; i++)
      drv_launch(CBID_EX, "adamw");
    cproton_scope_exit("optimizer");
    set_phase(2 * step + 2);
  }
  pthread_join(t, NULL);
}

Test(backend_cupti_lazy, eager_loop_on_a_cupti_that_drops_exits,
     .init = setup, .fini = teardown) {
  char *eager = same_in_both(eager_loop_scenario, "lazy9");
  cr_assert(strstr(eager, "/forward/gemm=108\n"), "%s", eager);
  cr_assert(strstr(eager, "/backward/fill_seed=12\n"), "%s", eager);
  cr_assert(strstr(eager, "/backward/gemm_nt=276\n"), "%s", eager);
  cr_assert(strstr(eager, "/optimizer/adamw=36\n"), "%s", eager);
  cr_assert_null(strstr(eager, "/optimizer/gemm"), "%s", eager);
  /* lazy mode did switch off, in the forward and the backward of each step */
  cr_assert_geq(atomic_load(&st.stats.lazy_ranges), 2 * EAGER_STEPS, "%llu",
                (unsigned long long)atomic_load(&st.stats.lazy_ranges));
  cr_assert_gt(atomic_load(&st.stats.lazy_records), 0);
  cr_assert_lt(atomic_load(&n_callbacks), EAGER_STEPS * (FWD + BWD) / 2);
  free(eager);
}

/* A scopeless thread's launch passes CUPTI's enabled check just before the
 * main thread's switch-off and runs its enter callback after it: the
 * callback switches back on, so CUPTI still delivers its exit (switching
 * off under it would leave that thread on one id for good). */
static void *checked_then_stalled(void *arg) {
  uint32_t id = drv_take_id();
  int enabled = !atomic_load(&cb_on[CBID]); /* CUPTI decides here */
  set_phase(1);
  wait_phase(2);
  if (enabled)
    drv_callbacks(CBID, id);
  drv_record(id, arg);
  drv_finish(CBID_EX, drv_take_id(), "later"); /* its thread's next launch */
  set_phase(3);
  return NULL;
}

/* lazy: off at the 4th launch's exit while the held one waits */
static void enter_race_scenario(void) {
  held_launch_scenario(checked_then_stalled, "racer", 3, 6);
}

Test(backend_cupti_lazy, a_callback_racing_the_switch_off_switches_back_on,
     .init = setup, .fini = teardown) {
  char *eager = same_in_both(enter_race_scenario, "lazy11");
  cr_assert(strstr(eager, "/a/ka=9\n"), "%s", eager);
  cr_assert(strstr(eager, "/a/racer=1\n"), "%s", eager);
  cr_assert(strstr(eager, "/a/later=1\n"), "%s", eager);
  cr_assert_geq(atomic_load(&st.stats.lazy_ranges), 1);
  free(eager);
}

/* A driver that repeats a thread's id after callbacks came back on (an exit
 * lost some other way than the one lazy mode avoids): the first repeated
 * capture suspends lazy mode, so no switch-off follows and every later
 * launch is captured. (The records of the off launches carry the repeated
 * id too: no profiler can place them; see docs/cupti.md.) */
static void repeated_ids_scenario(void) {
  cproton_scope_enter("a", NULL);
  for (int i = 0; i < 10; i++)
    drv_launch(CBID, "ka"); /* off after the 4th */
  cproton_scope_exit("a");
  open_frame = 4; /* the last capture's id, for every later call (H100) */
  after_suspension();
}

Test(backend_cupti_lazy, repeated_ids_suspend_lazy_mode, .init = setup,
     .fini = teardown) {
  char *lazy = run(repeated_ids_scenario, 1, "lazy10_lazy");
  cr_assert_eq(atomic_load(&st.stats.lazy_suspended), 1);
  cr_assert_eq(atomic_load(&st.stats.lazy_ranges), 1);
  cr_assert_eq(atomic_load(&n_callbacks), 100, "lazy mode went on skipping");
  cr_assert(strstr(lazy, "/c/kc="), "%s", lazy);
  free(lazy);
}

#else
Test(backend_cupti_lazy, skipped_without_cupti_headers) {
  cr_skip_test("CUPTI headers not found at configure time");
}
#endif
