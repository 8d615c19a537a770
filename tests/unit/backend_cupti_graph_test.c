/* backend_cupti_graph_test.c -- CUDA graphs on a fake driver: the callback
 * sequence CUDA and CUPTI produce for stream capture, instantiation, graph
 * destruction and replay (tests/unit/backend_cupti_test.c's style: synthetic
 * callback data through callbacks.c, synthetic CUpti_ActivityKernel10
 * records through records.c), with the records thread far behind the
 * launching thread, as on a GPU under do_bench_cudagraph. The tables have
 * the production sizes (cp_cupti_config_build). */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/callbacks.h"
#include "backend/cupti/config.h"
#include "backend/cupti/features.h"
#include "backend/cupti/graphtime.h"
#include "backend/cupti/lazy.h"
#include "backend/cupti/records.h"
#include "backend/cupti/stats.h"
#include "core/compat.h"
#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "cupti_synth.h"
#include "testutil.h"

/* ---- the fake driver ------------------------------------------------------ */

static cp_cupti_state st;

static int fake_node_id(void *node, uint64_t *id) {
  *id = (uint64_t)(uintptr_t)node;
  return 0;
}

static int fake_describe(uint32_t id, cp_device_info *d) {
  (void)id;
  snprintf(d->arch, sizeof d->arch, "90");
  return 0;
}

static void setup(void) {
  cp_session_reset_all();
  cp_device_reset();
  memset(&st, 0, sizeof st);
  cp_cupti_config c;
  cp_cupti_config_build(&c, NULL, NULL, NULL, NULL, NULL);
  st.corr = cp_corr_new(c.ring_slots);
  st.graphs = cp_graph_new(c.graph_nodes, c.graph_max);
  st.hooks.graph_node_id = fake_node_id;
  st.hooks.describe_device = fake_describe;
  cpt_log_capture(CPROTON_LOG_DEBUG);
}

static void teardown(void) {
  cp_corr_free(st.corr);
  cp_graph_free(st.graphs);
  cpt_log_release();
}

/* Correlation ids as the driver hands them out: one per API call. */
static uint32_t next_corr = 1;
/* Graph node ids as CUPTI hands them out: unique, increasing. */
static uint64_t next_node = 1;

static void api(CUpti_CallbackId cbid, uint32_t corr) {
  CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                          .functionName = "api",
                          .correlationId = corr};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
  d.callbackSite = CUPTI_API_EXIT;
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

static void node_event(CUpti_CallbackId cbid, uint64_t node,
                       uint64_t original) {
  CUpti_GraphData g = {.node = (CUgraphNode)(uintptr_t)node,
                       .originalNode = (CUgraphNode)(uintptr_t)original,
                       .nodeType = CU_GRAPH_NODE_TYPE_KERNEL};
  CUpti_ResourceData r = {.resourceDescriptor = &g};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_RESOURCE, cbid, &r);
}

/* A graph: its original nodes and the nodes of its executable instance. */
typedef struct graph {
  uint64_t first_node, first_exec;
  size_t n;
} graph;

/* Stream capture of `n` kernel launches: each launch is an API call with a
 * correlation id of its own (no record ever comes for it) that creates a
 * kernel node under the caller's current context. */
static void capture_begin(void) {
  api(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, next_corr++);
}
static void capture_end(void) {
  api(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, next_corr++);
}
static void capture_launches(graph *g, size_t n) {
  if (!g->n)
    g->first_node = next_node;
  for (size_t i = 0; i < n; i++) {
    CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                            .functionName = "cuLaunchKernel",
                            .correlationId = next_corr++};
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
    node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, next_node++, 0);
    d.callbackSite = CUPTI_API_EXIT;
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
  }
  g->n += n;
}

/* cuGraphInstantiate: every node cloned (a CREATED then a CLONED for the
 * clone); PyTorch then destroys the original graph at once. */
static void instantiate(graph *g, int destroy_original) {
  g->first_exec = next_node;
  for (size_t i = 0; i < g->n; i++) {
    uint64_t clone = next_node++;
    node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, clone, 0);
    node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, clone, g->first_node + i);
  }
  for (size_t i = 0; destroy_original && i < g->n; i++)
    node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING,
               g->first_node + i, 0);
}

static void destroy_exec(const graph *g) {
  for (size_t i = 0; i < g->n; i++)
    node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING,
               g->first_exec + i, 0);
}

/* The kernel records that have not reached the records thread yet. */
typedef CUpti_ActivityKernel10 krec;
static krec *pending;
static size_t n_pending, pending_cap;

static void add_record(const char *name, uint32_t corr, uint64_t node,
                       uint32_t graph_id) {
  if (n_pending == pending_cap) {
    pending_cap = pending_cap ? 2 * pending_cap : 4096;
    pending = realloc(pending, pending_cap * sizeof *pending);
    cr_assert_not_null(pending);
  }
  krec *k = &pending[n_pending++];
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = name;
  k->correlationId = corr;
  k->start = 1000 * n_pending;
  k->end = k->start + 10;
  k->streamId = 7;
  k->graphId = graph_id;
  k->graphNodeId = node;
}

/* cuGraphLaunch of `g`: one correlation id, one record per kernel node. */
static void replay(const graph *g, const char *kernel, uint32_t graph_id) {
  uint32_t corr = next_corr++;
  api(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, corr);
  for (size_t i = 0; i < g->n; i++)
    add_record(kernel, corr, g->first_exec + i, graph_id);
}

/* The records thread catches up: every pending record, in buffers. */
static void deliver_all(void) {
  for (size_t at = 0; at < n_pending; at += 4096) {
    size_t n = n_pending - at < 4096 ? n_pending - at : 4096;
    cp_records_process(&st, (uint8_t *)(pending + at), n * sizeof(krec),
                       cpt_next_kernel);
  }
  n_pending = 0;
}

static void free_pending(void) {
  free(pending);
  pending = NULL;
  n_pending = pending_cap = 0;
}

/* ---- reading profiles ------------------------------------------------------ */

static json_t *finalize(int sid, const char *path) {
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j, "cannot read %s", full);
  return j;
}

static json_t *child(json_t *n, const char *name) {
  json_t *kids = json_object_get(n, "children"), *c;
  size_t i;
  json_array_foreach(kids, i, c) {
    const char *s =
        json_string_value(json_object_get(json_object_get(c, "frame"), "name"));
    if (s && strcmp(s, name) == 0)
      return c;
  }
  return NULL;
}

static json_t *node_at(json_t *profile, const char *const *path) {
  json_t *n = json_array_get(profile, 0);
  for (; n && *path; path++)
    n = child(n, *path);
  return n;
}

static long long count_at(json_t *profile, const char *const *path) {
  json_t *n = node_at(profile, path);
  if (!n)
    return -1;
  return json_integer_value(
      json_object_get(json_object_get(n, "metrics"), "count"));
}

#define PATH(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The backend starts with empty tables (cupti_backend.c start_locked):
 * what happened before was never seen. */
static void backend_starts(void) {
  cp_corr_clear(st.corr);
  cp_graph_clear(st.graphs);
}

static int start(const char *path) {
  int sid = cpt_start_session(path, "none", "tree", NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

/* ---- the workload ---------------------------------------------------
 * do_bench_cudagraph over 8 problem sizes: under matmul_<size>, a graph of
 * `nodes` cuBLAS launches captured under matmul_<size>/cublas is
 * instantiated (the original destroyed, as PyTorch does), replayed 3 times
 * under matmul_<size>, then destroyed; the records thread reads nothing
 * until the end. On a GPU this left 6 of 8 sizes without <captured_at>. */
Test(backend_cupti_graph, replays_keep_capture_path_when_records_lag,
     .init = setup, .fini = teardown) {
  enum { SIZES = 8, NODES = 10000, REPLAYS = 3 };
  const char *path = cpt_tmp_path("cupti_graph_lag");
  int sid = start(path);
  static char names[SIZES][32];
  for (int s = 0; s < SIZES; s++) {
    snprintf(names[s], sizeof names[s], "matmul_%d", 64 << s);
    cproton_scope_enter(names[s], NULL);
    graph g = {0};
    cproton_scope_enter("cublas", NULL);
    capture_begin();
    capture_launches(&g, NODES);
    capture_end();
    cproton_scope_exit("cublas");
    instantiate(&g, 1);
    for (int r = 0; r < REPLAYS; r++)
      replay(&g, "nvjet", (uint32_t)s + 1);
    destroy_exec(&g);
    cproton_scope_exit(names[s]);
  }
  deliver_all();
  json_t *p = finalize(sid, path);
  for (int s = 0; s < SIZES; s++) {
    cr_expect_eq(count_at(p, PATH(names[s], "<captured_at>", names[s],
                                  "cublas", "nvjet")),
                 NODES * REPLAYS, "size %d: replays at their capture path",
                 s);
    cr_expect_null(node_at(p, PATH(names[s], "nvjet")),
                   "size %d: no replay without its capture path", s);
  }
  json_decref(p);
  cr_expect_eq(atomic_load(&st.stats.collisions), 0,
               "captured launches get no record: overwriting them loses "
               "nothing");
  cr_expect_eq(cp_stats_report(&st.stats, cp_corr_capacity(st.corr)), 0,
               "no warning: %s", cpt_logged.all);
  free_pending();
}

/* ---- sizes and counts ------------------------------------------------------- */

/* One graph of 100,000 kernel nodes, replayed twice, records read late. */
Test(backend_cupti_graph, hundred_thousand_nodes_in_one_graph, .init = setup,
     .fini = teardown) {
  enum { NODES = 100000 };
  const char *path = cpt_tmp_path("cupti_graph_100k");
  int sid = start(path);
  graph g = {0};
  cproton_scope_enter("capture", NULL);
  capture_begin();
  capture_launches(&g, NODES);
  capture_end();
  cproton_scope_exit("capture");
  instantiate(&g, 1);
  cproton_scope_enter("step", NULL);
  replay(&g, "k", 1);
  replay(&g, "k", 1);
  cproton_scope_exit("step");
  deliver_all();
  json_t *p = finalize(sid, path);
  cr_assert_eq(count_at(p, PATH("step", "<captured_at>", "capture", "k")),
               2 * NODES);
  json_decref(p);
  cr_assert_eq(cp_stats_report(&st.stats, cp_corr_capacity(st.corr)), 0,
               "%s", cpt_logged.all);
  free_pending();
}

/* Thousands of graph execs, each destroyed and its graph re-captured (as
 * g.reset() and a new capture do), no flush until the end: every replay
 * keeps its own capture scope. A flush then frees the dead entries. */
Test(backend_cupti_graph, thousands_of_execs_destroyed_and_reinstantiated,
     .init = setup, .fini = teardown) {
  enum { EXECS = 3000, NODES = 20 };
  const char *path = cpt_tmp_path("cupti_graph_execs");
  int sid = start(path);
  for (int e = 0; e < EXECS; e++) {
    char scope[32];
    snprintf(scope, sizeof scope, "cap_%d", e % 10);
    graph g = {0};
    cproton_scope_enter(scope, NULL);
    capture_begin();
    capture_launches(&g, NODES);
    capture_end();
    cproton_scope_exit(scope);
    instantiate(&g, 1);
    cproton_scope_enter("replay", NULL);
    replay(&g, "k", (uint32_t)e + 1);
    cproton_scope_exit("replay");
    destroy_exec(&g);
  }
  deliver_all();
  cr_assert_eq(cp_graph_count(st.graphs), 2 * EXECS * NODES,
               "dead entries kept until a flush");
  uint32_t gen = cp_graph_flush_begin(st.graphs);
  cr_assert_eq(cp_graph_flushed(st.graphs, gen), 2 * EXECS * NODES);
  json_t *p = finalize(sid, path);
  for (int c = 0; c < 10; c++) {
    char scope[32];
    snprintf(scope, sizeof scope, "cap_%d", c);
    cr_assert_eq(count_at(p, PATH("replay", "<captured_at>", scope, "k")),
                 EXECS / 10 * NODES, "%s", scope);
  }
  cr_assert_null(node_at(p, PATH("replay", "k")));
  json_decref(p);
  free_pending();
}

/* A table that cannot grow any more evicts dead entries; a record that
 * needed one is counted and named in the warning, never silently placed. */
Test(backend_cupti_graph, evicted_entries_are_counted_and_warned,
     .init = setup, .fini = teardown) {
  cp_graph_free(st.graphs);
  st.graphs = cp_graph_new(64, 128); /* at most 96 entries */
  const char *path = cpt_tmp_path("cupti_graph_evict");
  int sid = start(path);
  graph a = {0}, b = {0};
  capture_launches(&a, 30);
  instantiate(&a, 1);
  replay(&a, "k", 1);
  destroy_exec(&a); /* 60 dead entries */
  capture_launches(&b, 30);
  instantiate(&b, 1); /* 60 more: the dead ones are evicted */
  replay(&b, "k", 2);
  deliver_all();
  cr_assert_eq(cp_graph_evicted(st.graphs), 60);
  cr_assert_eq(atomic_load(&st.stats.graph_lost), 30);
  json_t *p = finalize(sid, path);
  cr_assert_eq(count_at(p, PATH("k")), 30, "a's replay: launch context");
  cr_assert_eq(count_at(p, PATH("<captured_at>", "k")), 30);
  json_decref(p);
  cr_assert(cp_stats_report(&st.stats, cp_corr_capacity(st.corr)));
  cr_assert(strstr(cpt_logged.all, "30 replayed graph kernels placed without "
                           "<captured_at>"),
            "%s", cpt_logged.all);
  free_pending();
}

/* ---- where graphs come from (Proton 3.9's cudagraph tests) ----------------- */

/* Captured before the session started: the kernels land under the launch
 * context only, with one warning per graph (Proton 3.9's text). */
Test(backend_cupti_graph, graph_captured_before_start, .init = setup,
     .fini = teardown) {
  graph g = {0};
  capture_begin();
  capture_launches(&g, 3);
  capture_end();
  instantiate(&g, 1);
  backend_starts();
  const char *path = cpt_tmp_path("cupti_graph_before");
  int sid = start(path);
  cproton_scope_enter("replay0", NULL);
  replay(&g, "k", 42);
  cproton_scope_exit("replay0");
  cproton_scope_enter("replay1", NULL);
  replay(&g, "k", 42);
  cproton_scope_exit("replay1");
  deliver_all();
  json_t *p = finalize(sid, path);
  cr_assert_eq(count_at(p, PATH("replay0", "k")), 3);
  cr_assert_eq(count_at(p, PATH("replay1", "k")), 3);
  json_decref(p);
  const char *w = strstr(cpt_logged.all, "Cannot find graph for graphExecId: 42");
  cr_assert_not_null(w, "%s", cpt_logged.all);
  cr_assert_null(strstr(w + 1, "Cannot find graph for graphExecId"),
                 "once per graph: %s", cpt_logged.all);
  cr_assert(strstr(cpt_logged.all, "start profiling before the graph is created"));
  free_pending();
}

/* Also a graph instantiated after start from one built before: its clones
 * are known (no capture context), not lost. */
Test(backend_cupti_graph, graph_built_before_start_instantiated_after,
     .init = setup, .fini = teardown) {
  graph g = {0};
  capture_launches(&g, 4);
  backend_starts();
  const char *path = cpt_tmp_path("cupti_graph_inst_after");
  int sid = start(path);
  instantiate(&g, 0);
  cproton_scope_enter("replay", NULL);
  replay(&g, "k", 5);
  cproton_scope_exit("replay");
  deliver_all();
  json_t *p = finalize(sid, path);
  cr_assert_eq(count_at(p, PATH("replay", "k")), 4);
  json_decref(p);
  cr_assert_eq(atomic_load(&st.stats.graph_lost), 0);
  free_pending();
}

typedef struct capture_job {
  graph g;
} capture_job;

static void *capture_on_thread(void *arg) {
  capture_job *j = arg;
  cproton_scope_enter("worker", NULL);
  cproton_scope_enter("layer", NULL);
  capture_begin();
  capture_launches(&j->g, 5);
  capture_end();
  cproton_scope_exit("layer");
  cproton_scope_exit("worker");
  return NULL;
}

/* Captured on another thread, under that thread's scopes; replayed on the
 * main thread. */
Test(backend_cupti_graph, graph_captured_on_another_thread, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_graph_thread");
  int sid = start(path);
  capture_job j = {0};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, capture_on_thread, &j), 0);
  pthread_join(t, NULL);
  instantiate(&j.g, 1);
  cproton_scope_enter("main", NULL);
  replay(&j.g, "k", 1);
  cproton_scope_exit("main");
  deliver_all();
  json_t *p = finalize(sid, path);
  cr_assert_eq(
      count_at(p, PATH("main", "<captured_at>", "worker", "layer", "k")), 5);
  json_decref(p);
  free_pending();
}

/* Proton 3.9's test_cudagraph_deactivate: nodes made while the session is
 * deactivated have no capture context (their replays land under the launch
 * context); replays while it is deactivated are not recorded. */
Test(backend_cupti_graph, deactivate_during_capture_and_replay,
     .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_graph_deact");
  int sid = start(path);
  graph g = {0};
  capture_begin();
  cproton_scope_enter("iter_0", NULL);
  cproton_scope_enter("scope_a", NULL);
  capture_launches(&g, 1);
  cproton_scope_exit("scope_a");
  cproton_session_deactivate(sid);
  cproton_scope_enter("scope_b", NULL);
  capture_launches(&g, 1);
  cproton_scope_exit("scope_b");
  cproton_session_activate(sid);
  cproton_scope_enter("scope_c", NULL);
  capture_launches(&g, 1);
  cproton_scope_exit("scope_c");
  cproton_scope_exit("iter_0");
  capture_end();
  instantiate(&g, 1);
  cproton_scope_enter("test0", NULL);
  replay(&g, "k", 1);
  cproton_scope_exit("test0");
  cproton_session_deactivate(sid);
  replay(&g, "k", 1); /* inactive replay: not recorded */
  cproton_session_activate(sid);
  deliver_all();
  json_t *p = finalize(sid, path);
  const char *at[] = {"test0", "<captured_at>", "iter_0", NULL};
  json_t *iter = node_at(p, at);
  cr_assert_not_null(iter);
  cr_assert_not_null(child(iter, "scope_a"));
  cr_assert_null(child(iter, "scope_b"));
  cr_assert_eq(count_at(p, PATH("test0", "<captured_at>", "iter_0",
                                "scope_c", "k")),
               1);
  cr_assert_eq(count_at(p, PATH("test0", "k")), 1, "scope_b's kernel");
  json_decref(p);
  cr_assert_eq(atomic_load(&st.stats.graph_lost), 0);
  free_pending();
}

/* Proton 3.9's test_cudagraph_multi_stream: a graph's kernels run on
 * several internal streams in no fixed order, interleaved with another
 * graph's; each record finds its own node, whatever the order. */
Test(backend_cupti_graph, multi_stream_records_in_any_order, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_graph_streams");
  int sid = start(path);
  graph x = {0}, y = {0};
  cproton_scope_enter("kernel_x", NULL);
  capture_launches(&x, 3);
  cproton_scope_exit("kernel_x");
  cproton_scope_enter("kernel_y", NULL);
  capture_launches(&y, 3);
  cproton_scope_exit("kernel_y");
  instantiate(&x, 1);
  instantiate(&y, 1);
  cproton_scope_enter("replay", NULL);
  replay(&x, "kx", 1);
  replay(&y, "ky", 2);
  cproton_scope_exit("replay");
  for (size_t i = 0; i < n_pending / 2; i++) { /* reverse, interleave */
    krec t = pending[i];
    pending[i] = pending[n_pending - 1 - i];
    pending[n_pending - 1 - i] = t;
    pending[i].streamId = 7 + (uint32_t)(i % 3);
  }
  deliver_all();
  json_t *p = finalize(sid, path);
  cr_assert_eq(count_at(p, PATH("replay", "<captured_at>", "kernel_x", "kx")),
               3);
  cr_assert_eq(count_at(p, PATH("replay", "<captured_at>", "kernel_y", "ky")),
               3);
  json_decref(p);
  free_pending();
}

/* Replays under alternating launch contexts: the memoised composition
 * follows the launch context. */
Test(backend_cupti_graph, memo_follows_the_launch_context, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_graph_memo");
  int sid = start(path);
  graph g = {0};
  cproton_scope_enter("cap", NULL);
  capture_launches(&g, 2);
  cproton_scope_exit("cap");
  instantiate(&g, 1);
  for (int r = 0; r < 6; r++) {
    const char *s = r % 2 ? "odd" : "even";
    cproton_scope_enter(s, NULL);
    replay(&g, "k", 1);
    cproton_scope_exit(s);
    deliver_all(); /* records of each replay read before the next */
  }
  json_t *p = finalize(sid, path);
  cr_assert_eq(count_at(p, PATH("even", "<captured_at>", "cap", "k")), 6);
  cr_assert_eq(count_at(p, PATH("odd", "<captured_at>", "cap", "k")), 6);
  json_decref(p);
  free_pending();
}

/* ---- names inside graphs: Proton 3.9 (op) and Proton 3.6 (kernel) ---------- */

static void op_capture_and_replay(int op_names, const char *path) {
  cp_graph_set_op_names(st.graphs, op_names);
  int sid = start(path);
  graph g = {0};
  cproton_scope_enter("triton", NULL);
  cproton_op_enter("kernel_x");
  capture_launches(&g, 1);
  cproton_op_exit();
  cproton_scope_exit("triton");
  instantiate(&g, 1);
  cproton_scope_enter("replay", NULL);
  replay(&g, "matmul_kernel", 1);
  cproton_scope_exit("replay");
  deliver_all();
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

Test(backend_cupti_graph, graph_kernels_take_the_op_name_by_default,
     .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_graph_op39");
  op_capture_and_replay(1, path);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  json_t *p = cpt_load_json(full);
  cr_assert_eq(
      count_at(p, PATH("replay", "<captured_at>", "triton", "kernel_x")), 1);
  json_decref(p);
  free_pending();
}

Test(backend_cupti_graph, graph_kernels_keep_their_name_as_proton_36,
     .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_graph_op36");
  op_capture_and_replay(0, path);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  json_t *p = cpt_load_json(full);
  cr_assert_eq(count_at(p, PATH("replay", "<captured_at>", "triton",
                                "matmul_kernel")),
               1);
  cr_assert_null(node_at(p, PATH("replay", "<captured_at>", "triton",
                                 "kernel_x")));
  json_decref(p);
  free_pending();
}

/* ---- tensor metrics given during a capture (Proton 3.9) --------------------
 * A metric given during a stream capture is written at every replay by a
 * captured copy kernel (python/cproton/metric.py); Proton 3.9 puts each
 * replay's value at <launch context>/<captured_at>/<capture path>, where
 * the replayed kernels land (its test_tensor_metrics_cudagraph,
 * test_periodic_flushing_cudagraph, test_cudagraph_multi_stream,
 * test_cudagraph_metric_queue_handles_inactive_replay). */

static long long metric_at(json_t *profile, const char *const *path,
                           const char *name) {
  json_t *n = node_at(profile, path);
  json_t *v = n ? json_object_get(json_object_get(n, "metrics"), name) : NULL;
  return v ? json_integer_value(v) : -1;
}

/* The copy kernel of a record of `slot`, launched during the capture the
 * way metric.launch_pending does: tagged around its launch. */
static void capture_copy_kernel(graph *g, uint32_t slot) {
  cproton_tensor_metric_tag(slot);
  capture_launches(g, 1);
  cproton_tensor_metric_tag(CPROTON_TENSOR_METRIC_NONE);
}

/* Drains "device" records {slot, value}. */
static void fold(uint32_t slot, int64_t value) {
  uint64_t w[2] = {slot, (uint64_t)value};
  size_t n = 0;
  cr_assert_eq(cproton_tensor_metric_fold(w, 2, &n), CPROTON_OK, "%s",
               cproton_last_error());
}

static void fold_double(uint32_t slot, double value) {
  int64_t bits;
  memcpy(&bits, &value, sizeof bits);
  fold(slot, bits);
}

Test(backend_cupti_graph, captured_tensor_metrics_land_at_each_replay,
     .init = setup, .fini = teardown) {
  cproton_set_proton_compat(CPROTON_PROTON_3_9);
  const char *path = cpt_tmp_path("cupti_graph_tmetric");
  int sid = start(path);
  uint64_t a, b;
  uint32_t eager, slot_a, slot_b;
  /* warm-up, eagerly: the same scope and metric, not captured */
  cproton_scope_enter("scope_a", &a);
  cr_assert_eq(cproton_tensor_metric_slot(a, "bytes", 0, &eager), 0);
  cproton_scope_exit("scope_a");
  fold(eager, 16);
  graph g = {0};
  capture_begin();
  cproton_scope_enter("scope_a", &a);
  cr_assert_eq(cproton_tensor_metric_slot_captured(a, "bytes", 0, 0, &slot_a),
               0, "%s", cproton_last_error());
  capture_copy_kernel(&g, slot_a);
  cproton_scope_exit("scope_a");
  cproton_scope_enter("scope_b", &b);
  cr_assert_eq(cproton_tensor_metric_slot_captured(b, "sum", 0, 0, &slot_b), 0);
  capture_copy_kernel(&g, slot_b);
  cproton_scope_exit("scope_b");
  capture_end();
  cr_assert_neq(slot_a, eager, "a captured slot is never an eager one");
  instantiate(&g, 1);
  /* two replays under test0, one under test1; the second replay's kernel
   * records come in the other order (two streams), the device records not */
  cproton_scope_enter("test0", NULL);
  replay(&g, CP_COMPAT_METRIC_KERNEL, 1);
  uint32_t corr = next_corr++;
  api(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, corr);
  add_record(CP_COMPAT_METRIC_KERNEL, corr, g.first_exec + 1, 1);
  add_record(CP_COMPAT_METRIC_KERNEL, corr, g.first_exec, 1);
  cproton_scope_exit("test0");
  cproton_scope_enter("test1", NULL);
  replay(&g, CP_COMPAT_METRIC_KERNEL, 1);
  cproton_scope_exit("test1");
  deliver_all();
  fold(slot_a, 5), fold(slot_b, 1), fold(slot_a, 7), fold(slot_b, 2);
  fold(slot_a, 11), fold(slot_b, 3);
  json_t *p = finalize(sid, path);
  cr_expect_eq(metric_at(p, PATH("test0", "<captured_at>", "scope_a"), "bytes"),
               12, "replays 1 and 2 at their place");
  cr_expect_eq(metric_at(p, PATH("test0", "<captured_at>", "scope_b"), "sum"),
               3);
  cr_expect_eq(metric_at(p, PATH("test1", "<captured_at>", "scope_a"), "bytes"),
               11, "replay 3 at its place");
  cr_expect_eq(metric_at(p, PATH("test1", "<captured_at>", "scope_b"), "sum"),
               3);
  cr_expect_eq(metric_at(p, PATH("scope_a"), "bytes"), 16,
               "the capture node keeps the eager value only");
  cr_expect_eq(metric_at(p, PATH("scope_b"), "sum"), -1);
  cr_expect_null(strstr(cpt_logged.all, "no replay of theirs"), "%s", cpt_logged.all);
  json_decref(p);
  free_pending();
}

/* A replay while no session is active writes its record on the GPU but
 * belongs to no session: it takes no place, and the next replay's record
 * still lands at that replay's place (Proton 3.9's
 * test_cudagraph_metric_queue_handles_inactive_replay). A record that finds
 * no place lands on its capture node and is reported. */
Test(backend_cupti_graph, inactive_replay_shifts_no_captured_metric,
     .init = setup, .fini = teardown) {
  cproton_set_proton_compat(CPROTON_PROTON_3_9);
  const char *path = cpt_tmp_path("cupti_graph_tmetric_inactive");
  int sid = start(path);
  uint32_t slot;
  graph g = {0};
  capture_begin();
  cproton_op_enter("owner");
  cr_assert_eq(cproton_tensor_metric_slot_captured(CPROTON_CURRENT_OP,
                                                   "sum_metric", 1, 0, &slot),
               0, "%s", cproton_last_error());
  cproton_op_exit();
  capture_copy_kernel(&g, slot);
  capture_end();
  instantiate(&g, 1);
  cr_assert_eq(cproton_session_deactivate(sid), 0);
  replay(&g, CP_COMPAT_METRIC_KERNEL, 1);
  deliver_all();
  fold_double(slot, 100); /* drained at activate: no session */
  cr_assert_eq(cproton_session_activate(sid), 0);
  cproton_scope_enter("profiled_replay", NULL);
  replay(&g, CP_COMPAT_METRIC_KERNEL, 1);
  cproton_scope_exit("profiled_replay");
  deliver_all();
  fold_double(slot, 4);
  fold_double(slot, 9); /* a record whose replay CUPTI never reported */
  json_t *p = finalize(sid, path);
  json_t *n = node_at(p, PATH("profiled_replay", "<captured_at>", "owner"));
  cr_assert_not_null(n);
  cr_expect_eq(json_real_value(json_object_get(json_object_get(n, "metrics"),
                                               "sum_metric")),
               4.0);
  n = node_at(p, PATH("owner"));
  cr_assert_not_null(n, "the unplaced record at its capture node");
  cr_expect_eq(json_real_value(json_object_get(json_object_get(n, "metrics"),
                                               "sum_metric")),
               9.0);
  cr_expect_not_null(strstr(cpt_logged.all, "1 records of metrics given during a CUDA "
                                    "graph capture found no replay of theirs"),
                     "%s", cpt_logged.all);
  json_decref(p);
  free_pending();
}

/* A full device buffer drops records (warned); their replays' places must
 * not be taken by later records of the same metric: the drain forgets what
 * is left once every buffer was folded (python/cproton/metric.py). */
Test(backend_cupti_graph, places_of_dropped_records_are_forgotten,
     .init = setup, .fini = teardown) {
  cproton_set_proton_compat(CPROTON_PROTON_3_9);
  const char *path = cpt_tmp_path("cupti_graph_tmetric_dropped");
  int sid = start(path);
  uint64_t a;
  uint32_t slot;
  graph g = {0};
  capture_begin();
  cproton_scope_enter("scope_a", &a);
  cr_assert_eq(cproton_tensor_metric_slot_captured(a, "bytes", 0, 0, &slot), 0);
  capture_copy_kernel(&g, slot);
  cproton_scope_exit("scope_a");
  capture_end();
  instantiate(&g, 1);
  cproton_scope_enter("test0", NULL);
  for (int r = 0; r < 3; r++)
    replay(&g, CP_COMPAT_METRIC_KERNEL, 1);
  cproton_scope_exit("test0");
  deliver_all();
  fold(slot, 5); /* the buffer kept one record of three */
  cr_expect_eq(cproton_tensor_metric_forget_places(), 2);
  cproton_scope_enter("test1", NULL);
  replay(&g, CP_COMPAT_METRIC_KERNEL, 1);
  cproton_scope_exit("test1");
  deliver_all();
  fold(slot, 7);
  json_t *p = finalize(sid, path);
  cr_expect_eq(metric_at(p, PATH("test0", "<captured_at>", "scope_a"), "bytes"),
               5);
  cr_expect_eq(metric_at(p, PATH("test1", "<captured_at>", "scope_a"), "bytes"),
               7, "the later replay's record at its own place");
  cr_expect_not_null(strstr(cpt_logged.all, "2 graph replays of captured metrics lost"),
                     "%s", cpt_logged.all);
  json_decref(p);
  free_pending();
}

/* Proton 3.6 had no tensor metrics: cproton keeps its capture-node layout
 * there, the slot is an ordinary one. */
Test(backend_cupti_graph, captured_tensor_metrics_keep_capture_node_as_36,
     .init = setup, .fini = teardown) {
  cproton_set_proton_compat(CPROTON_PROTON_3_6);
  const char *path = cpt_tmp_path("cupti_graph_tmetric36");
  int sid = start(path);
  uint64_t a;
  uint32_t slot, eager;
  graph g = {0};
  capture_begin();
  cproton_scope_enter("scope_a", &a);
  cr_assert_eq(cproton_tensor_metric_slot_captured(a, "bytes", 0, 0, &slot), 0);
  cr_assert_eq(cproton_tensor_metric_slot(a, "bytes", 0, &eager), 0);
  capture_copy_kernel(&g, slot);
  cproton_scope_exit("scope_a");
  capture_end();
  cr_expect_eq(slot, eager);
  instantiate(&g, 1);
  cproton_scope_enter("test0", NULL);
  replay(&g, CP_COMPAT_METRIC_KERNEL, 1);
  cproton_scope_exit("test0");
  deliver_all();
  fold(slot, 5);
  json_t *p = finalize(sid, path);
  cr_expect_eq(metric_at(p, PATH("scope_a"), "bytes"), 5);
  cr_expect_null(node_at(p, PATH("test0", "<captured_at>", "scope_a",
                                 "bytes")));
  json_decref(p);
  free_pending();
}

/* ---- graph-level mode --------------------------------------------------------- */

/* CPROTON_CUPTI_GRAPHS=graph times each graph launch with a pair of CUDA
 * events (graphtime.c) on a fake driver: the events' stream, their elapsed
 * time (40 ns a launch), whether they are finished and whether the stream
 * is being captured are the test's. */
static struct {
  int created, recorded, queried, synced;
  void *streams[8]; /* the stream of the last records */
  int not_ready;    /* cuEventQuery answers CUDA_ERROR_NOT_READY */
  int capturing;    /* cuStreamIsCapturing's status */
} ev;
static cp_curesult f_ev_create(cp_cuevent *e, unsigned flags) {
  cr_assert_eq(flags, 0, "CU_EVENT_DEFAULT: timing on");
  *e = (cp_cuevent)(uintptr_t)(++ev.created);
  return 0;
}
static cp_curesult f_ev_record(cp_cuevent e, cp_custream s) {
  (void)e;
  ev.streams[ev.recorded++ % 8] = s;
  return 0;
}
static cp_curesult f_ev_query(cp_cuevent e) {
  (void)e;
  ev.queried++;
  return ev.not_ready ? 600 : 0;
}
static cp_curesult f_ev_sync(cp_cuevent e) {
  (void)e;
  ev.synced++;
  return 0;
}
static cp_curesult f_ev_destroy(cp_cuevent e) { return (void)e, 0; }
static cp_curesult f_ev_elapsed(float *ms, cp_cuevent a, cp_cuevent b) {
  cr_assert_neq(a, b);
  *ms = 0.00004f;
  return 0;
}
static cp_curesult f_ctx_device(cp_cudevice *dev) { return *dev = 1, 0; }
static cp_curesult f_is_capturing(cp_custream s, int *status) {
  (void)s;
  *status = ev.capturing;
  return 0;
}

static cp_cudadrv fake_drv;

static void graph_level_on(void) {
  memset(&ev, 0, sizeof ev);
  fake_drv.cuEventCreate = f_ev_create;
  fake_drv.cuEventRecord = f_ev_record;
  fake_drv.cuEventQuery = f_ev_query;
  fake_drv.cuEventSynchronize = f_ev_sync;
  fake_drv.cuEventDestroy = f_ev_destroy;
  fake_drv.cuEventElapsedTime = f_ev_elapsed;
  fake_drv.cuCtxGetDevice = f_ctx_device;
  fake_drv.cuStreamIsCapturing = f_is_capturing;
  st.graph_level = 1;
  st.gtime = cp_graphtime_new(&fake_drv);
  cr_assert_not_null(st.gtime);
}

/* The flush's part: every timed launch delivered. */
static uint64_t graph_drain(void) {
  return cp_graphtime_drain(st.gtime, cp_records_graph_launch, &st);
}

/* cuGraphLaunch (or _ptsz) on `stream`, returning `result`. */
static int graph_cb_off; /* lazy mode switched cuGraphLaunch's callback off */
static void graph_launch(CUpti_CallbackId cbid, void *stream, CUresult result) {
  if (graph_cb_off)
    return; /* CUPTI calls nothing */
  struct {
    void *exec, *stream;
  } params = {(void *)0x99, stream};
  CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                          .functionName = "cuGraphLaunch",
                          .functionParams = &params,
                          .functionReturnValue = &result,
                          .correlationId = next_corr++};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
  d.callbackSite = CUPTI_API_EXIT;
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

static void graph_level_off(void) {
  cp_graphtime_free(st.gtime, cp_records_graph_launch, &st);
  st.gtime = NULL;
}

/* One "<cuda graph>" node per launch under the launch's context, its time
 * the events'; CUPTI's records of the graph's kernels are dropped. */
Test(backend_cupti_graph, graph_level_mode_one_record_per_launch,
     .init = setup, .fini = teardown) {
  graph_level_on();
  const char *path = cpt_tmp_path("cupti_graph_level");
  int sid = start(path);
  graph g = {0};
  capture_begin();
  capture_launches(&g, 50);
  capture_end();
  instantiate(&g, 1);
  cproton_scope_enter("step", NULL);
  for (int r = 0; r < 3; r++) {
    graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
                 CUDA_SUCCESS);
    for (size_t i = 0; i < g.n; i++) /* CUPTI's per-node records */
      add_record("k", next_corr - 1, g.first_exec + i, 9);
  }
  cproton_scope_exit("step");
  cr_assert_eq(ev.recorded, 6, "a start and an end event per launch");
  for (int i = 0; i < 6; i++)
    cr_assert_eq(ev.streams[i], (void *)0x7, "on the launch's stream");
  deliver_all(); /* the per-node records: dropped */
  cr_assert_eq(graph_drain(), 3);
  cr_assert_eq(ev.synced, 3, "a flush waits for the launches");
  json_t *p = finalize(sid, path);
  cr_assert_eq(count_at(p, PATH("step", "<cuda graph>")), 3);
  json_t *n = node_at(p, PATH("step", "<cuda graph>"));
  cr_assert_eq(json_integer_value(json_object_get(
                   json_object_get(n, "metrics"), "time (ns)")),
               120);
  cr_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(n, "metrics"), "device_id")),
                   "1");
  cr_assert_null(node_at(p, PATH("step", "k")));
  json_decref(p);
  cr_assert_eq(atomic_load(&st.stats.graph_records), 3);
  graph_level_off();
  free_pending();
}

/* A launch that is captured (on a capturing thread, or into a stream some
 * thread captures) runs nothing and gets no event; a failed launch gets
 * no record; a _ptsz launch's NULL stream is the per-thread stream. */
Test(backend_cupti_graph, graph_level_mode_skips_captured_and_failed_launches,
     .init = setup, .fini = teardown) {
  graph_level_on();
  const char *path = cpt_tmp_path("cupti_graph_level_skip");
  int sid = start(path);
  capture_begin();
  graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
               CUDA_SUCCESS);
  capture_end();
  ev.capturing = 1;
  graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
               CUDA_SUCCESS);
  ev.capturing = 0;
  cr_assert_eq(ev.recorded, 0, "captured launches: no event");
  graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(ev.recorded, 1, "a failed launch: no end event");
  graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, NULL,
               CUDA_SUCCESS);
  cr_assert_eq(ev.streams[1], (void *)0x2, "CU_STREAM_PER_THREAD");
  cr_assert_eq(graph_drain(), 1);
  cproton_session_finalize(sid, NULL);
  graph_level_off();
}

/* Every pair in flight and none finished: a launch is counted, not timed,
 * and never waits; a finished oldest pair is read back and reused. */
Test(backend_cupti_graph, graph_level_mode_dry_pool_counts_and_reclaims,
     .init = setup, .fini = teardown) {
  graph_level_on();
  int sid = start(cpt_tmp_path("cupti_graph_level_dry"));
  ev.not_ready = 1;
  for (int i = 0; i < CP_GRAPHTIME_PAIRS + 5; i++)
    graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
                 CUDA_SUCCESS);
  cp_graphtime_stats s;
  cp_graphtime_stats_get(st.gtime, &s);
  cr_assert_eq(s.dry, 5);
  cr_assert_eq(ev.synced, 0, "the launch path never waits");
  ev.not_ready = 0;
  for (int i = 0; i < 10; i++) /* each reclaims the oldest */
    graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
                 CUDA_SUCCESS);
  cp_graphtime_stats_get(st.gtime, &s);
  cr_assert_eq(s.dry, 5);
  cr_assert_eq(s.timed, 10);
  cr_assert_eq(ev.created, 2 * CP_GRAPHTIME_PAIRS, "pairs are reused");
  cr_assert_eq(graph_drain(), CP_GRAPHTIME_PAIRS + 10);
  cproton_session_finalize(sid, NULL);
  graph_level_off();
}

/* Graph-level mode reads no node's capture context, so it subscribes to no
 * graph-node callback: CUPTI then never calls into cproton (nor cproton
 * back into cuptiGetGraphNodeId) while a graph is built, instantiated,
 * updated or destroyed. Per node, the three are on. */
static int node_cb_on[3];
static CUptiResult f_enable_cb(uint32_t on, CUpti_SubscriberHandle s,
                               CUpti_CallbackDomain d, CUpti_CallbackId id) {
  (void)s;
  static const CUpti_CallbackId nodes[3] = {
      CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
      CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
      CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING};
  for (int i = 0; i < 3; i++)
    if (d == CUPTI_CB_DOMAIN_RESOURCE && id == nodes[i])
      node_cb_on[i] = (int)on;
  return CUPTI_SUCCESS;
}
static int kernels_enabled; /* CONCURRENT_KERNEL enables */
static CUptiResult f_activity(CUpti_ActivityKind k) {
  (void)k;
  return CUPTI_SUCCESS;
}
static CUptiResult f_activity_on(CUpti_ActivityKind k) {
  kernels_enabled += k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  cr_assert_neq(k, CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
                "CUPTI's graph trace crashed (docs/cupti.md)");
  return CUPTI_SUCCESS;
}
static CUptiResult f_flush(uint32_t flag) {
  (void)flag;
  return CUPTI_SUCCESS;
}

static int node_callbacks_at(int graph_level) {
  cp_loader_api fake = {.cuptiEnableCallback = f_enable_cb,
                        .cuptiActivityEnable = f_activity_on,
                        .cuptiActivityDisable = f_activity,
                        .cuptiActivityFlushAll = f_flush};
  kernels_enabled = 0;
  cp_cupti_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.graph_level = graph_level;
  cp_features_env env = {.api = &fake, .state = &st, .config = &cfg};
  memset(node_cb_on, 0, sizeof node_cb_on);
  cr_assert_eq(cp_features_enable(&env), CPROTON_OK, "%s",
               cproton_last_error());
  int n = node_cb_on[0] + node_cb_on[1] + node_cb_on[2];
  cp_features_disable(&env);
  cr_assert_eq(node_cb_on[0] + node_cb_on[1] + node_cb_on[2], 0,
               "disable switches them off");
  return n;
}

Test(backend_cupti_graph, graph_level_mode_subscribes_no_node_callbacks,
     .init = setup, .fini = teardown) {
  cr_assert_eq(node_callbacks_at(0), 3, "per node: created, cloned, destroy");
  cr_assert_eq(node_callbacks_at(1), 0, "graph level: none");
  cr_assert_eq(node_callbacks_at(2), 0, "graph only: none");
}

/* "graph": kernel records stay on (kernels outside graphs are recorded);
 * "graph-only": CUPTI makes no kernel record; neither asks for CUPTI's
 * graph trace. */
Test(backend_cupti_graph, graph_only_mode_enables_no_kernel_records,
     .init = setup, .fini = teardown) {
  node_callbacks_at(1);
  cr_assert_eq(kernels_enabled, 1);
  node_callbacks_at(2);
  cr_assert_eq(kernels_enabled, 0);
}

static int toggle_graph_cb(uint32_t cbid, int on) {
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch)
    graph_cb_off = !on;
  return 0;
}

/* Lazy mode (the default) switches launch callbacks off over a stable run
 * of launches; a timed graph launch is not part of that scheme, so every
 * one keeps its enter and exit and is timed. */
Test(backend_cupti_graph, graph_level_mode_keeps_graph_callbacks_under_lazy,
     .init = setup, .fini = teardown) {
  graph_level_on();
  graph_cb_off = 0;
  st.hooks.launch_callbacks = toggle_graph_cb;
  int sid = start(cpt_tmp_path("cupti_graph_level_lazy"));
  cr_assert_eq(cp_lazy_start(&st), CPROTON_OK);
  cproton_scope_enter("step", NULL);
  for (int i = 0; i < 200; i++)
    graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
                 CUDA_SUCCESS);
  cproton_scope_exit("step");
  cr_assert_eq(graph_cb_off, 0, "cuGraphLaunch's callback stays on");
  cr_assert_eq(graph_drain(), 200);
  cproton_session_finalize(sid, NULL);
  cp_lazy_stop(&st);
  graph_level_off();
}

/* In graph-level mode a graph launch's record is its events': it puts no
 * entry in the correlation ring (per node, every kernel of the launch reads
 * one, so it is kept and spilled). */
Test(backend_cupti_graph, graph_level_mode_keeps_no_read_launch_entry,
     .init = setup, .fini = teardown) {
  cp_corr_free(st.corr);
  st.corr = cp_corr_new(64);
  graph_level_on();
  int sid = start(cpt_tmp_path("cupti_graph_level_ring"));
  for (int i = 0; i < 128; i++) /* every slot reused */
    graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (void *)0x7,
                 CUDA_SUCCESS);
  cr_assert_eq(cp_corr_spilled(st.corr), 0, "no graph-launch entries");
  cr_assert_eq(graph_drain(), 128);
  cr_assert_eq(atomic_load(&st.stats.graph_records), 128);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  cproton_session_finalize(sid, NULL);
  graph_level_off();
}

/* A launch on a capturing thread gets no record, so its ring entry may be
 * overwritten freely; after a failed capture begin, launches are ordinary
 * and a reused slot spills them. */
Test(backend_cupti_graph, failed_capture_begin_captures_nothing,
     .init = setup, .fini = teardown) {
  cp_corr_free(st.corr);
  st.corr = cp_corr_new(64);
  int sid = start(cpt_tmp_path("cupti_graph_failed_begin"));
  CUresult err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                          .functionName = "cuStreamBeginCapture_v2",
                          .correlationId = next_corr++,
                          .functionReturnValue = &err};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &d);
  d.callbackSite = CUPTI_API_EXIT;
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &d);
  cr_assert_not(cp_callbacks_capturing());
  for (int i = 0; i < 100; i++)
    api(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, next_corr++);
  cr_assert_eq(cp_corr_spilled(st.corr), 100 - 64, "unread: spilled");
  capture_begin();
  cr_assert(cp_callbacks_capturing());
  graph g = {0};
  capture_launches(&g, 100);
  capture_end();
  cr_assert_not(cp_callbacks_capturing());
  cr_assert_eq(cp_corr_spilled(st.corr), 100 - 64 + 64,
               "captured launches never spill, what they replace does");
  cproton_session_finalize(sid, NULL);
}

/* ---- configuration ------------------------------------------------------------ */

Test(backend_cupti_graph, graph_variables_are_read_and_checked) {
  cp_cupti_config c;
  cp_cupti_config_build(&c, NULL, NULL, NULL, NULL, NULL);
  unsetenv("CPROTON_CUPTI_GRAPHS");
  unsetenv("CPROTON_GRAPH_KERNEL_NAMES");
  cp_cupti_config_graphs_from_env(&c);
  cr_assert_eq(c.graph_level, 0, "per node by default");
  cr_assert_eq(c.graph_op_names, 1, "the hook's name by default");
  setenv("CPROTON_CUPTI_GRAPHS", "graph", 1);
  setenv("CPROTON_GRAPH_KERNEL_NAMES", "kernel", 1);
  cp_cupti_config_graphs_from_env(&c);
  cr_assert_eq(c.graph_level, 1);
  cr_assert_eq(c.graph_op_names, 0);
  setenv("CPROTON_CUPTI_GRAPHS", "graph-only", 1);
  cp_cupti_config_graphs_from_env(&c);
  cr_assert_eq(c.graph_level, 2);
  setenv("CPROTON_CUPTI_GRAPHS", "graphs", 1);
  setenv("CPROTON_GRAPH_KERNEL_NAMES", "Hook", 1);
  cp_cupti_config_graphs_from_env(&c);
  cr_assert_eq(c.graph_level, -1, "a typo fails the start");
  cr_assert_eq(c.graph_op_names, -1);
  unsetenv("CPROTON_CUPTI_GRAPHS");
  unsetenv("CPROTON_GRAPH_KERNEL_NAMES");
}

Test(backend_cupti_graph, graph_ablations_parse) {
  cr_assert_eq(cp_cupti_config_ablate("notimestamp,nographs"),
               CP_ABLATE_NO_TIMESTAMP | CP_ABLATE_NO_GRAPH_CB);
  cr_assert_eq(cp_cupti_config_ablate("norecords"), CP_ABLATE_NO_RECORDS);
}

#else
Test(backend_cupti_graph, skipped_without_cupti_headers) {}
#endif
