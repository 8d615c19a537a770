/* backend_cupti_test.c -- the CUPTI backend without a GPU: synthetic
 * activity records (real CUpti_ActivityKernel10 structs in a buffer) and
 * synthetic callback data go through records.c and callbacks.c, and the
 * profiles they produce are read back with jansson. Also the loader with no
 * driver, the buffer pool, the search order and the end-of-run warning. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/cudadrv.h"
#include "backend/cupti/callbacks.h"
#include "backend/cupti/config.h"
#include "backend/cupti/cupti_backend.h"
#include "cupti_synth.h"
#include "backend/cupti/loader.h"
#include "backend/cupti/pool.h"
#include "backend/cupti/records.h"
#include "backend/cupti/stats.h"
#include "core/clock.h"
#include "core/device.h"
#include "core/kfacts.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

/* ---- fixtures ------------------------------------------------------------ */

static cp_cupti_state st;
static int n_described;

static int fake_describe(uint32_t id, cp_device_info *d) {
  n_described++;
  snprintf(d->arch, sizeof d->arch, "90");
  d->num_sms = 132;
  d->clock_rate = 1980000;
  d->memory_clock_rate = 2619000;
  d->bus_width = 5120;
  return 0;
}

/* Graph nodes are opaque pointers; the fake id is the pointer value. */
static int fake_node_id(void *node, uint64_t *id) {
  *id = (uint64_t)(uintptr_t)node;
  return 0;
}

static void setup_sized(size_t ring, size_t graph_nodes) {
  cp_session_reset_all();
  cp_device_reset();
  memset(&st, 0, sizeof st);
  st.corr = cp_corr_new(ring);
  st.graphs = cp_graph_new(graph_nodes, graph_nodes);
  st.hooks.describe_device = fake_describe;
  st.hooks.graph_node_id = fake_node_id;
  n_described = 0;
  cpt_log_capture(CPROTON_LOG_DEBUG);
}

static void setup(void) { setup_sized(1024, 1024); }

static void teardown(void) {
  cp_corr_free(st.corr);
  cp_graph_free(st.graphs);
  cpt_log_release();
}

static int start(const char *name, const char *data) {
  int sid = cpt_start_session(name, "none", data, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

/* What CUPTI calls on a driver-API launch (enter and exit). */
static void launch(CUpti_CallbackId cbid, uint32_t correlation) {
  CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                          .functionName = "cuLaunchKernel",
                          .correlationId = correlation};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
  d.callbackSite = CUPTI_API_EXIT;
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

static void graph_event(CUpti_CallbackId cbid, uintptr_t node,
                        uintptr_t original) {
  CUpti_GraphData g = {.node = (CUgraphNode)node,
                       .originalNode = (CUgraphNode)original,
                       .nodeType = CU_GRAPH_NODE_TYPE_KERNEL};
  CUpti_ResourceData r = {.resourceDescriptor = &g};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_RESOURCE, cbid, &r);
}

/* ---- synthetic activity buffers ------------------------------------------ */

typedef CUpti_ActivityKernel10 krec;

typedef struct buffer {
  krec recs[256];
  size_t n;
} buffer;

static void add_kernel(buffer *b, const char *name, uint32_t corr,
                       uint64_t start, uint64_t dur, uint32_t dev,
                       uint32_t stream) {
  cr_assert_lt(b->n, 256);
  krec *k = &b->recs[b->n++];
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = name;
  k->correlationId = corr;
  k->start = start;
  k->end = start + dur;
  k->deviceId = dev;
  k->streamId = stream;
}

static void add_graph_kernel(buffer *b, const char *name, uint32_t corr,
                             uint64_t start, uint64_t dur, uint64_t node) {
  add_kernel(b, name, corr, start, dur, 0, 7);
  b->recs[b->n - 1].graphId = 1;
  b->recs[b->n - 1].graphNodeId = node;
}

static size_t process(buffer *b) {
  return cp_records_process(&st, (uint8_t *)b->recs, b->n * sizeof(krec), cpt_next_kernel);
}

/* ---- reading profiles ---------------------------------------------------- */

static json_t *finalize(int sid, const char *path, const char *ext) {
  /* traces as cproton's full timeline, whose lanes and flows are checked */
  const char *format = strcmp(ext, ".chrome_trace") == 0 ? "chrome_timeline"
                                                         : NULL;
  cr_assert_eq(cproton_session_finalize(sid, format), CPROTON_OK, "%s",
               cproton_last_error());
  char full[512];
  snprintf(full, sizeof full, "%s%s", path, ext);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j, "cannot read %s", full);
  return j;
}

/* The node at `path` (names below ROOT, NULL-terminated), or NULL. */
static json_t *node_at(json_t *profile, const char *const *path) {
  json_t *n = json_array_get(profile, 0);
  for (; n && *path; path++) {
    json_t *kids = json_object_get(n, "children"), *found = NULL, *c;
    size_t i;
    json_array_foreach(kids, i, c) {
      const char *name = json_string_value(
          json_object_get(json_object_get(c, "frame"), "name"));
      if (name && strcmp(name, *path) == 0)
        found = c;
    }
    n = found;
  }
  return n;
}

static long long metric(json_t *node, const char *name) {
  cr_assert_not_null(node);
  json_t *v = json_object_get(json_object_get(node, "metrics"), name);
  cr_assert_not_null(v, "no metric %s", name);
  return json_integer_value(v);
}

#define PATH(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- correlation ring ------------------------------------------------------
 */

Test(backend_cupti, corr_lookup_and_collision, .init = setup,
     .fini = teardown) {
  cp_launch_site a = {.sessions = 1, .thread = 11},
                 b = {.sessions = 1, .thread = 22}, out;
  size_t cap = cp_corr_capacity(st.corr);
  cr_assert_eq(cap, 1024);
  cr_assert_eq(cp_corr_put(st.corr, 5, &a, 0), CP_CORR_STORED);
  cr_assert(cp_corr_get(st.corr, 5, &out));
  cr_assert_eq(out.thread, 11);
  cr_assert_not(cp_corr_get(st.corr, 6, &out), "unknown id");
  cr_assert_not(cp_corr_get(st.corr, 0, &out), "id 0 is never valid");
  cr_assert_eq(cp_corr_put(st.corr, 5 + (uint32_t)cap, &b, 0), CP_CORR_STORED,
               "entry 5 was read: overwriting it loses nothing");
  cr_assert_not(cp_corr_get(st.corr, 5, &out), "overwritten entry");
  cr_assert(cp_corr_get(st.corr, 5 + (uint32_t)cap, &out));
  cr_assert_eq(out.thread, 22);
  cr_assert_eq(cp_corr_put(st.corr, 7, &a, 0), CP_CORR_STORED);
  cr_assert_eq(cp_corr_put(st.corr, 7 + (uint32_t)cap, &b, 0),
               CP_CORR_SPILLED, "entry 7 was never read: it spills");
  cr_assert(cp_corr_peek(st.corr, 7, &out), "PC sampling's look leaves it");
  cr_assert_eq(cp_corr_spill_count(st.corr), 1);
  cr_assert(cp_corr_get(st.corr, 7, &out), "found in the spill map");
  cr_assert_eq(out.thread, 11);
  cr_assert_eq(cp_corr_spill_count(st.corr), 0, "read once: dropped");
  cr_assert_not(cp_corr_get(st.corr, 7, &out));
  cr_assert(cp_corr_get(st.corr, 7 + (uint32_t)cap, &out));
  cr_assert_eq(out.thread, 22);
}

/* ---- kernels under their launch context ------------------------------------
 */

Test(backend_cupti, kernels_land_under_scopes, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_scopes");
  int sid = start(path, NULL);
  buffer b = {.n = 0};
  cr_assert_eq(cproton_scope_enter("fwd", NULL), CPROTON_OK);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, 2);
  cr_assert_eq(cproton_scope_enter("attn", NULL), CPROTON_OK);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 3);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, 4);
  cproton_scope_exit("attn");
  cproton_scope_exit("fwd");
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, 5);
  add_kernel(&b, "matmul", 1, 1000, 100, 0, 7);
  add_kernel(&b, "matmul", 2, 2000, 50, 0, 7);
  add_kernel(&b, "softmax", 3, 3000, 10, 0, 8);
  add_kernel(&b, "coop", 4, 4000, 20, 0, 8);
  add_kernel(&b, "top", 5, 5000, 1, 0, 7);
  cr_assert_eq(process(&b), 5);
  json_t *p = finalize(sid, path, ".hatchet");
  json_t *mm = node_at(p, PATH("fwd", "matmul"));
  cr_assert_eq(metric(mm, "count"), 2);
  cr_assert_eq(metric(mm, "time (ns)"), 150);
  cr_assert_eq(metric(node_at(p, PATH("fwd", "attn", "softmax")), "count"), 1);
  cr_assert_eq(metric(node_at(p, PATH("fwd", "attn", "coop")), "count"), 1);
  cr_assert_eq(metric(node_at(p, PATH("top")), "time (ns)"), 1);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  cr_assert_eq(atomic_load(&st.stats.kernels), 5);
  json_decref(p);
}

/* Each kernel record's registers, shared and local memory, grid and block
 * become the kernel's facts (issue 26): the first record's values, written
 * once on the kernel's frame, with the distinct configurations counted. */
Test(backend_cupti, kernel_records_give_kernel_facts, .init = setup,
     .fini = teardown) {
  cp_kfacts_reset();
  const char *path = cpt_tmp_path("cupti_facts");
  int sid = start(path, NULL);
  buffer b = {.n = 0};
  for (uint32_t c = 1; c <= 3; c++)
    launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, c);
  for (uint32_t c = 1; c <= 3; c++) {
    add_kernel(&b, "facts_k", c, 1000 * c, 100, 0, 7);
    krec *k = &b.recs[b.n - 1];
    k->registersPerThread = c == 1 ? 168 : 40;
    k->staticSharedMemory = 2048;
    k->dynamicSharedMemory = 65536;
    k->localMemoryPerThread = 24;
    k->gridX = c == 3 ? 64 : 132, k->gridY = 2, k->gridZ = 1;
    k->blockX = 256, k->blockY = 1, k->blockZ = 1;
  }
  cr_assert_eq(process(&b), 3);
  json_t *p = finalize(sid, path, ".hatchet");
  json_t *k = node_at(p, PATH("facts_k"));
  cr_assert_eq(metric(k, "count"), 3);
  cr_assert_eq(metric(k, "kernel.regs"), 168);
  cr_assert_eq(metric(k, "kernel.smem_static"), 2048);
  cr_assert_eq(metric(k, "kernel.smem_dynamic"), 65536);
  cr_assert_eq(metric(k, "kernel.local_bytes"), 24);
  cr_assert_eq(metric(k, "kernel.grid"), 264);
  cr_assert_eq(metric(k, "kernel.block"), 256);
  cr_assert_eq(metric(k, "kernel.configs"), 2);
  cr_assert_null(json_object_get(json_object_get(json_array_get(p, 0), "metrics"),
                                 "kernel.regs"), "ROOT has no facts");
  json_decref(p);
  cp_kfacts_reset();
}

/* An autotuned kernel's records: two compiled variants (block, dynamic
 * shared memory) of one name; each delivered record's duration goes to its
 * variant, so the profile tells the slow variant from the fast one
 * (kernel.variant_*, the advisor's autotune_slower). */
Test(backend_cupti, kernel_records_time_variants, .init = setup,
     .fini = teardown) {
  cp_kfacts_reset();
  const char *path = cpt_tmp_path("cupti_variants");
  int sid = start(path, NULL);
  buffer b = {.n = 0};
  for (uint32_t c = 1; c <= 4; c++) {
    launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, c);
    add_kernel(&b, "tuned_k", c, 1000 * c, c == 4 ? 40 : 150, 0, 7);
    krec *k = &b.recs[b.n - 1];
    k->gridX = c == 4 ? 256 : 4096, k->gridY = k->gridZ = 1;
    k->blockX = c == 4 ? 256 : 128, k->blockY = k->blockZ = 1;
    k->dynamicSharedMemory = c == 4 ? 98304 : 4096;
  }
  cr_assert_eq(process(&b), 4);
  json_t *p = finalize(sid, path, ".hatchet");
  json_t *k = node_at(p, PATH("tuned_k"));
  cr_assert_eq(metric(k, "time (ns)"), 3 * 150 + 40);
  cr_assert_eq(metric(k, "kernel.variants"), 2);
  cr_assert_eq(metric(k, "kernel.variant_launches"), 4);
  cr_assert_eq(metric(k, "kernel.variant_ns"), 3 * 150 + 40);
  cr_assert_eq(metric(k, "kernel.best_variant_ns"), 40);
  cr_assert_eq(metric(k, "kernel.best_variant_threads"), 256);
  json_decref(p);
  cp_kfacts_reset();
}

/* A launch under an op (Triton's launch hook names it by the kernel's
 * launch_metadata): the kernel's record lands on the op's frame, which now
 * shows the kernel's facts; the op name alone had none (issue 26: a time
 * profile's renamed frames carried no compile facts). */
Test(backend_cupti, op_frames_show_their_kernels_facts, .init = setup,
     .fini = teardown) {
  cp_kfacts_reset();
  const char *path = cpt_tmp_path("cupti_op_facts");
  int sid = start(path, NULL);
  buffer b = {.n = 0};
  cr_assert_eq(cproton_op_enter("mm_2048x2048"), CPROTON_OK);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
  cproton_op_exit();
  add_kernel(&b, "mm_kernel", 1, 1000, 100, 0, 7);
  b.recs[0].registersPerThread = 46;
  b.recs[0].blockX = 128, b.recs[0].blockY = b.recs[0].blockZ = 1;
  cr_assert_eq(process(&b), 1);
  json_t *p = finalize(sid, path, ".hatchet");
  json_t *k = node_at(p, PATH("mm_2048x2048"));
  cr_assert_eq(metric(k, "count"), 1);
  cr_assert_eq(metric(k, "kernel.regs"), 46);
  cr_assert_eq(metric(k, "kernel.block"), 128);
  json_decref(p);
  cp_kfacts_reset();
}

Test(backend_cupti, unknown_ids_are_counted_and_kept, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_unknown");
  int sid = start(path, NULL);
  buffer b = {.n = 0};
  add_kernel(&b, "orphan", 99, 1000, 5, 0, 7);
  process(&b);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 1);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_eq(metric(node_at(p, PATH("orphan")), "count"), 1);
  json_decref(p);
  cr_assert(cp_stats_report(&st.stats, cp_corr_capacity(st.corr)));
  cr_assert(strstr(cpt_logged.all, "1 kernel records unattributed"), "%s", cpt_logged.all);
}

/* A long run wraps the ring: entries whose records were already read are
 * overwritten without loss, so nothing is counted or reported. */
Test(backend_cupti, ring_wrap_after_records_read_is_no_collision,
     .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_wrap");
  int sid = start(path, NULL);
  cproton_scope_enter("a", NULL);
  for (uint32_t round = 0; round < 3; round++) {
    buffer b = {.n = 0};
    for (uint32_t i = 0; i < 4; i++) {
      uint32_t id = 3 + i + round * 1024; /* round r reuses round r-1's slots */
      launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, id);
      add_kernel(&b, "k", id, 1000 * (round * 4 + i + 1), 5, 0, 7);
    }
    process(&b);
  }
  cproton_scope_exit("a");
  cr_assert_eq(atomic_load(&st.stats.collisions), 0);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_eq(metric(node_at(p, PATH("a", "k")), "count"), 12);
  json_decref(p);
}

/* A slot reused before its record came: the entry spills (corr.h), and
 * both records land where they were launched. */
Test(backend_cupti, ring_reuse_spills_unread_entry, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_collide");
  int sid = start(path, NULL);
  cproton_scope_enter("a", NULL);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 3);
  cproton_scope_exit("a");
  cproton_scope_enter("b", NULL);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 3 + 1024); /* same slot */
  cproton_scope_exit("b");
  buffer b = {.n = 0};
  add_kernel(&b, "k", 3, 1000, 5, 0, 7);
  add_kernel(&b, "k", 3 + 1024, 2000, 5, 0, 7);
  process(&b);
  cr_assert_eq(atomic_load(&st.stats.collisions), 0);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  cr_assert_eq(cp_corr_spilled(st.corr), 1);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_eq(metric(node_at(p, PATH("b", "k")), "count"), 1);
  cr_assert_eq(metric(node_at(p, PATH("a", "k")), "count"), 1);
  json_decref(p);
}

/* A full spill map expires its older half (counted); a record that still
 * comes for one of them is unattributed (under ROOT, counted); nothing is
 * a collision, and memory stays bounded. */
Test(backend_cupti, full_spill_expires_oldest_entries, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_spill_full");
  int sid = start(path, NULL);
  size_t fits = CP_CORR_SPILL_SLOTS / 4 * 3;
  uint32_t last = (uint32_t)(1024 + fits + 5);
  cproton_scope_enter("a", NULL);
  for (uint32_t id = 1; id <= last; id++)
    launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, id);
  cproton_scope_exit("a");
  cr_assert_eq(atomic_load(&st.stats.collisions), 0);
  cr_assert_eq(cp_corr_expired(st.corr), fits / 2);
  cr_assert_leq(cp_corr_spill_count(st.corr), fits);
  buffer b = {.n = 0};
  add_kernel(&b, "k", last - 1024, 1000, 5, 0, 7); /* spilled */
  add_kernel(&b, "k", last, 2000, 5, 0, 7);        /* in the ring */
  add_kernel(&b, "k", 2, 3000, 5, 0, 7);           /* expired */
  process(&b);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 1);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_eq(metric(node_at(p, PATH("a", "k")), "count"), 2);
  cr_assert_eq(metric(node_at(p, PATH("k")), "count"), 1);
  json_decref(p);
}

Test(backend_cupti, launches_without_session_are_skipped, .init = setup,
     .fini = teardown) {
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1); /* no session yet */
  const char *path = cpt_tmp_path("cupti_skip");
  int sid = start(path, NULL);
  buffer b = {.n = 0};
  add_kernel(&b, "before", 1, 1000, 5, 0, 7);
  process(&b);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_null(node_at(p, PATH("before")));
  json_decref(p);
}

/* ---- CUDA graphs ------------------------------------------------------------
 */

Test(backend_cupti, graph_replays_attribute_to_launch, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_graph");
  int sid = start(path, NULL);
  cproton_scope_enter("replay", NULL);
  buffer b = {.n = 0};
  for (uint32_t r = 0; r < 10; r++) {
    launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, 100 + r);
    for (int k = 0; k < 3; k++) /* nodes 501..503: graph made before start */
      add_graph_kernel(&b, k == 2 ? "reduce" : "axpy", 100 + r, 1000 * r + k,
                       10, 501 + (uint64_t)k);
  }
  cproton_scope_exit("replay");
  process(&b);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_eq(metric(node_at(p, PATH("replay", "axpy")), "count"), 20);
  cr_assert_eq(metric(node_at(p, PATH("replay", "reduce")), "count"), 10);
  cr_assert_eq(metric(node_at(p, PATH("replay", "reduce")), "time (ns)"), 100);
  cr_assert_eq(cp_graph_count(st.graphs), 0, "nothing kept per launch");
  json_decref(p);
}

Test(backend_cupti, graph_kernels_keep_capture_context, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_capture");
  int sid = start(path, NULL);
  cproton_scope_enter("build", NULL);
  cproton_scope_enter("layer", NULL);
  graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 11, 0);
  graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 12, 0);
  cproton_scope_exit("layer");
  cproton_scope_exit("build");
  /* cuGraphInstantiate clones the nodes */
  graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 21, 11);
  graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 22, 12);
  cr_assert_eq(cp_graph_count(st.graphs), 4);
  cproton_scope_enter("step", NULL);
  launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, 7);
  launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, 8);
  cproton_scope_exit("step");
  buffer b = {.n = 0};
  for (uint32_t c = 7; c <= 8; c++) {
    add_graph_kernel(&b, "gemm", c, 100 * c, 5, 21);
    add_graph_kernel(&b, "relu", c, 100 * c + 10, 1, 22);
  }
  process(&b);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_eq(
      metric(node_at(p, PATH("step", "<captured_at>", "build", "layer", "gemm")),
             "count"),
      2);
  cr_assert_eq(metric(node_at(p, PATH("step", "<captured_at>", "build", "layer",
                                      "relu")),
                      "time (ns)"),
               2);
  json_decref(p);
  /* destroyed nodes keep their entries for records not flushed yet, until
   * a flush that began after the destroy completes */
  size_t kept = cp_graph_count(st.graphs);
  uint32_t before = cp_graph_flush_begin(st.graphs);
  for (uintptr_t n = 11; n <= 22; n++)
    graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING, n, 0);
  cr_assert_eq(cp_graph_count(st.graphs), kept);
  cr_assert_eq(cp_graph_flushed(st.graphs, before), 0,
               "destroyed during that flush: kept");
  cr_assert_eq(cp_graph_flushed(st.graphs, cp_graph_flush_begin(st.graphs)),
               kept);
  cr_assert_eq(cp_graph_count(st.graphs), 0);
}

Test(backend_cupti, graph_table_is_bounded, .init = setup, .fini = teardown) {
  teardown();
  setup_sized(1024, 64); /* 64 slots, at most 48 entries */
  graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 999, 0);
  cp_launch_site s;
  cr_assert_eq(cp_graph_count(st.graphs), 1, "known, so never lost");
  cr_assert_not(cp_graph_get(st.graphs, 999, &s),
                "no session: no capture context to keep");
  cp_graph_remove(st.graphs, 999);
  int sid = start(cpt_tmp_path("cupti_bounded"), "tree");
  for (uintptr_t n = 1; n <= 200; n++)
    graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, n, 0);
  cr_assert_eq(cp_graph_count(st.graphs), 48);
  cr_assert_eq(atomic_load(&st.stats.graph_full), 152);
  for (uintptr_t n = 1; n <= 200; n++)
    graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING, n, 0);
  cr_assert_eq(cp_graph_count(st.graphs), 48, "kept for late records");
  cr_assert_eq(cp_graph_flushed(st.graphs, cp_graph_flush_begin(st.graphs)),
               48);
  cr_assert_eq(cp_graph_count(st.graphs), 0);
  for (uintptr_t n = 1000; n < 1040; n++)
    graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, n, 0);
  for (uintptr_t n = 1000; n < 1040; n++)
    cr_assert(cp_graph_get(st.graphs, n, &s), "node %zu", (size_t)n);
  for (uintptr_t n = 1000; n < 1040; n += 2)
    cp_graph_remove(st.graphs, n);
  for (uintptr_t n = 1001; n < 1040; n += 2)
    cr_assert(cp_graph_get(st.graphs, n, &s), "after removals: %zu", (size_t)n);
  cr_assert_eq(cp_graph_count(st.graphs), 20);
  cproton_session_finalize(sid, NULL);
}

/* ---- NVTX -------------------------------------------------------------------
 */

static void nvtx(CUpti_CallbackId cbid, const void *params) {
  CUpti_NvtxData d = {.functionName = "nvtx", .functionParams = params};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
}

Test(backend_cupti, nvtx_ranges_become_scopes, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_nvtx");
  int sid = start(path, NULL);
  nvtxRangePushA_params outer = {.message = "outer"};
  nvtxEventAttributes_t attr = {.version = NVTX_VERSION,
                                .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
                                .messageType = NVTX_MESSAGE_TYPE_ASCII,
                                .message.ascii = "inner"};
  nvtxRangePushEx_params inner = {.eventAttrib = &attr};
  nvtxRangePop_params pop = {0};
  nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, &outer);
  nvtx(CUPTI_CBID_NVTX_nvtxRangePushEx, &inner);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
  nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &pop);
  nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &pop);
  nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &pop); /* unmatched */
  cr_assert_eq(cproton_scope_depth(), 0);
  cr_assert_eq(atomic_load(&st.stats.nvtx_unmatched), 1);
  buffer b = {.n = 0};
  add_kernel(&b, "k", 1, 1000, 5, 0, 7);
  process(&b);
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_eq(metric(node_at(p, PATH("outer", "inner", "k")), "count"), 1);
  json_decref(p);
}

/* Context "native" through CUPTI's launch callback: NVTX ranges first,
 * then the launch's native frames (from the function that called the
 * driver: here `launch`, called by this test), then the kernel; nothing of
 * the profiler (callbacks.c, context.c, native.c) in between. */
Test(backend_cupti, nvtx_ranges_then_native_frames, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_native");
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = path;
  o.backend = "none";
  o.context = "native";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK, "%s",
               cproton_last_error());
  nvtxRangePushA_params range = {.message = "range"};
  nvtxRangePop_params pop = {0};
  nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, &range);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
  nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &pop);
  buffer b = {.n = 0};
  add_kernel(&b, "k", 1, 1000, 5, 0, 7);
  process(&b);
  json_t *p = finalize(sid, path, ".hatchet");
  json_t *n = node_at(p, PATH("range"));
  cr_assert_not_null(n, "the NVTX range is not ROOT's child");
  int frames = 0, ours = 0;
  for (;;) { /* the one path below the range, down to the kernel */
    json_t *kids = json_object_get(n, "children");
    cr_assert_eq(json_array_size(kids), 1);
    n = json_array_get(kids, 0);
    const char *name = json_string_value(
        json_object_get(json_object_get(n, "frame"), "name"));
    if (strcmp(name, "k") == 0)
      break;
    frames++;
    ours += strstr(name, "backend_cupti_test.c:") != NULL;
    cr_expect(!strstr(name, "callbacks.c") && !strstr(name, "context.c") &&
                  !strstr(name, "native.c") && !strstr(name, "native:0x"),
              "profiler or unnamed frame '%s'", name);
  }
  cr_expect_gt(frames, 0, "no native frames between the range and the kernel");
  cr_expect_gt(ours, 0, "no frame of this test file");
  cr_expect_eq(metric(n, "count"), 1);
  json_decref(p);
}

/* ---- devices ----------------------------------------------------------------
 */

Test(backend_cupti, devices_registered_once_each, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_devices");
  int sid = start(path, NULL);
  buffer b = {.n = 0};
  for (uint32_t i = 0; i < 8; i++) {
    launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 10 + i);
    add_kernel(&b, "k", 10 + i, 1000 * i, 5, i % 2 ? 3 : 0, 7);
  }
  process(&b);
  cr_assert_eq(n_described, 2);
  cp_device_info d[4];
  cr_assert_eq(cp_device_list(d, 4), 2);
  cr_assert_eq(d[1].id, 3);
  cr_assert_str_eq(d[1].arch, "90");
  json_t *p = finalize(sid, path, ".hatchet");
  json_t *dev =
      json_object_get(json_object_get(json_array_get(p, 1), "CUDA"), "3");
  cr_assert_not_null(dev);
  cr_assert_eq(json_integer_value(json_object_get(dev, "num_sms")), 132);
  cr_assert_eq(json_integer_value(json_object_get(dev, "bus_width")), 5120);
  json_decref(p);
}

/* ---- threads ----------------------------------------------------------------
 */

typedef struct worker {
  uint32_t first;
  char scope[16];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  cproton_scope_enter(w->scope, NULL);
  for (uint32_t i = 0; i < 100; i++)
    launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, w->first + i);
  cproton_scope_exit(w->scope);
  return NULL;
}

Test(backend_cupti, launching_threads_keep_their_contexts, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_threads");
  int sid = start(path, NULL);
  pthread_t t[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i].first = 1 + (uint32_t)i * 100;
    snprintf(w[i].scope, sizeof w[i].scope, "thread%d", i);
    pthread_create(&t[i], NULL, work, &w[i]);
  }
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  buffer b = {.n = 0};
  for (uint32_t c = 1; c <= 400; c++) {
    if (b.n == 256) {
      process(&b);
      b.n = 0;
    }
    add_kernel(&b, "k", c, 10 * c, 3, (c / 100) % 2, c % 4);
  }
  process(&b);
  json_t *p = finalize(sid, path, ".hatchet");
  for (int i = 0; i < 4; i++) {
    char scope[16];
    snprintf(scope, sizeof scope, "thread%d", i);
    long long n = metric(node_at(p, PATH(scope, "k")), "count");
    cr_assert_eq(n, 100, "%s: %lld", scope, n);
  }
  json_decref(p);
}

/* ---- trace ------------------------------------------------------------------
 */

Test(backend_cupti, trace_has_gpu_lanes_and_flows, .init = setup,
     .fini = teardown) {
  const char *path = cpt_tmp_path("cupti_trace");
  int sid = start(path, "trace");
  cproton_scope_enter("step", NULL);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
  launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 2);
  cproton_scope_exit("step");
  buffer b = {.n = 0};
  uint64_t now = cp_clock_now_ns();
  add_kernel(&b, "k0", 1, now + 1000, 500, 0, 7);
  add_kernel(&b, "k1", 2, now + 2000, 500, 1, 9);
  process(&b);
  json_t *p = finalize(sid, path, ".chrome_trace");
  json_t *ev = json_object_get(p, "traceEvents"), *e;
  size_t i;
  int kernels = 0, flows = 0, gpu1_stream9 = 0, cpu_scope = 0;
  json_array_foreach(ev, i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *cat = json_string_value(json_object_get(e, "cat"));
    long long pid = json_integer_value(json_object_get(e, "pid"));
    long long tid = json_integer_value(json_object_get(e, "tid"));
    if (!strcmp(ph, "X") && cat && !strcmp(cat, "kernel"))
      kernels++;
    if (!strcmp(ph, "X") && cat && !strcmp(cat, "scope") && pid == 0)
      cpu_scope++;
    if (!strcmp(ph, "f"))
      flows++;
    if (!strcmp(ph, "M") && pid == 2 && tid == 9)
      gpu1_stream9++;
  }
  cr_assert_eq(kernels, 2);
  cr_assert_eq(flows, 2);
  cr_assert_eq(cpu_scope, 1);
  cr_assert_eq(gpu1_stream9, 1, "lane GPU 1 / stream 9 is named");
  json_decref(p);
}

/* ---- reporting, pool, loader ------------------------------------------------
 */

Test(backend_cupti, dropped_records_warn_once, .init = setup,
     .fini = teardown) {
  cr_assert_not(cp_stats_report(&st.stats, 1024), "clean run: no warning");
  cr_assert_eq(cpt_logged.n_warnings, 0);
  atomic_store(&st.stats.kernels, 40000);
  atomic_store(&st.stats.dropped, 5);
  atomic_store(&st.stats.no_buffer, 2);
  cr_assert(cp_stats_report(&st.stats, 1024));
  cr_assert_eq(cpt_logged.n_warnings, 1);
  cr_assert(strstr(cpt_logged.all, "of 40000 kernel records: 5 kernel records dropped "
                           "by CUPTI"),
            "%s", cpt_logged.all);
  cr_assert(strstr(cpt_logged.all, "2 activity buffer requests refused"), "%s", cpt_logged.all);
}

Test(backend_cupti, pool_recycles_and_bounds, .init = setup, .fini = teardown) {
  cp_pool *p = cp_pool_new(1000, 2, 3);
  cr_assert_not_null(p);
  cr_assert_eq(cp_pool_buffer_size(p), 1000);
  uint8_t *a = cp_pool_take(p), *b = cp_pool_take(p), *c = cp_pool_take(p);
  cr_assert(a && b && c);
  cr_assert_eq((uintptr_t)a % 8, 0);
  cr_assert_null(cp_pool_take(p), "at the maximum");
  cr_assert_eq(cp_pool_out(p), 3);
  cp_pool_give(p, b);
  cr_assert_eq(cp_pool_take(p), b, "recycled");
  cp_pool_give(p, a), cp_pool_give(p, b), cp_pool_give(p, c);
  cr_assert_eq(cp_pool_out(p), 0);
  cp_pool_free(p);
}

Test(backend_cupti, search_order, .init = setup, .fini = teardown) {
  cp_cupti_config c;
  cp_cupti_config_build(&c, "/x/libcupti.so.13", "/opt/cuda",
                        "/venv/lib/python3.12/site-packages/cproton", NULL,
                        NULL);
  cr_assert_str_eq(c.cupti_file, "/x/libcupti.so.13");
  cr_assert_str_eq(c.dirs[0], "/opt/cuda/extras/CUPTI/lib64");
  cr_assert_str_eq(c.dirs[1], "/opt/cuda/lib64");
  cr_assert_str_eq(c.dirs[2], "/opt/cuda/targets/x86_64-linux/lib");
  cr_assert_str_eq(c.dirs[3], "/usr/local/cuda/extras/CUPTI/lib64");
  cr_assert_str_eq(c.dirs[6], "/venv/lib/python3.12/site-packages/cproton/"
                              "../nvidia/cuda_cupti/lib");
  cr_assert_eq(c.nvtx, 1);
  cr_assert_gt(c.ring_slots, 1000);
}

/* Proton's variables: TRITON_CUPTI_LIB_PATH first in the search,
 * TRITON_ENABLE_NVTX and TRITON_PROTON_DISABLE with Proton's booleans. */
Test(backend_cupti, triton_environment, .init = setup, .fini = teardown) {
  setenv("TRITON_CUPTI_LIB_PATH", "/triton/cupti", 1);
  cp_cupti_config c;
  cp_cupti_config_from_env(&c);
  cr_assert_str_eq(c.dirs[0], "/triton/cupti");
  unsetenv("TRITON_CUPTI_LIB_PATH");
  static const struct {
    const char *triton, *cproton;
    int nvtx;
  } cases[] = {{NULL, NULL, 1},   {"On", NULL, 1},  {"TRUE", NULL, 1},
               {"1", NULL, 1},    {"0", NULL, 0},   {"false", NULL, 0},
               {"off", NULL, 0},  {NULL, "0", 0},   {"1", "0", 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    if (cases[i].triton)
      setenv("TRITON_ENABLE_NVTX", cases[i].triton, 1);
    else
      unsetenv("TRITON_ENABLE_NVTX");
    if (cases[i].cproton)
      setenv("CPROTON_NVTX", cases[i].cproton, 1);
    else
      unsetenv("CPROTON_NVTX");
    cr_assert_eq(cp_cupti_config_nvtx_from_env(), cases[i].nvtx, "case %zu", i);
  }
  unsetenv("TRITON_ENABLE_NVTX");
  unsetenv("CPROTON_NVTX");
  cp_inject_config ic;
  setenv("TRITON_PROTON_DISABLE", "on", 1);
  cp_inject_config_from_env(&ic);
  cr_assert(ic.disabled);
  setenv("TRITON_PROTON_DISABLE", "no", 1);
  cp_inject_config_from_env(&ic);
  cr_assert_not(ic.disabled);
  unsetenv("TRITON_PROTON_DISABLE");
}

/* The loader takes the driver from the one driver table (cudadrv.c): a
 * missing library is a clear error there, and, on a machine without a
 * driver, the loader's. */
Test(backend_cupti, no_driver_is_a_clear_error, .init = setup,
     .fini = teardown) {
  cp_cudadrv t;
  cr_assert_eq(cp_cudadrv_open("libcuda_not_here.so.1", &t), CPROTON_ENODEVICE);
  cr_assert(strstr(cproton_last_error(), "cannot load libcuda_not_here.so.1"),
            "%s", cproton_last_error());
  void *driver = dlopen("libcuda.so.1", RTLD_NOW);
  if (driver)
    cr_skip_test("a CUDA driver is installed here");
  cp_cupti_config c;
  cp_cupti_config_build(&c, NULL, NULL, NULL, NULL, NULL);
  cp_loader_api api;
  cr_assert_eq(cp_loader_open(&c, &api), CPROTON_ENODEVICE);
  cr_assert(strstr(cproton_last_error(), "no NVIDIA driver"), "%s",
            cproton_last_error());
}

Test(backend_cupti, sessions_fall_back_to_cpu_only, .init = setup,
     .fini = teardown) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver)
    driver = dlopen("libcuda.so.1", RTLD_NOW);
  if (driver)
    cr_skip_test("a CUDA driver is installed here");
  cr_assert_eq(cp_cupti_backend.available(), 0);
  cr_assert(strstr(cproton_last_error(), "no NVIDIA driver"), "%s",
            cproton_last_error());
  const char *path = cpt_tmp_path("cupti_fallback");
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = path;
  o.backend = "cupti";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK, "%s",
               cproton_last_error());
  cr_assert_eq(cpt_logged.n_warnings, 1, "%s", cpt_logged.all);
  cr_assert(strstr(cpt_logged.all, "recording CPU scopes only"), "%s", cpt_logged.all);
  cproton_scope_enter("cpu", NULL);
  cproton_scope_exit("cpu");
  json_t *p = finalize(sid, path, ".hatchet");
  cr_assert_not_null(node_at(p, PATH("cpu")));
  json_decref(p);
  char lib[64];
  cp_cupti_backend_library_path(lib, sizeof lib);
  cr_assert_str_eq(lib, "");
}

#else
Test(backend_cupti, skipped_without_cuda_headers) {
  cr_skip_test("built without the CUDA/CUPTI headers");
}
#endif

/* Issue 24 item 16: every CPROTON_CUPTI_* setting is checked, never
 * ignored: a bad buffer size, lazy switch or ablation name is kept in
 * `bad` (the backend's start fails with it), good ones leave it empty. */
Test(backend_cupti, bad_cupti_settings_are_refused, .init = setup, .fini = teardown) {
  static const struct {
    const char *var, *value, *says; /* says: NULL = accepted */
  } cases[] = {
      {"CPROTON_CUPTI_BUFFER_KB", "128", NULL},
      {"CPROTON_CUPTI_BUFFER_KB", "16", "CPROTON_CUPTI_BUFFER_KB='16'"},
      {"CPROTON_CUPTI_BUFFER_KB", "4mb", "CPROTON_CUPTI_BUFFER_KB='4mb'"},
      {"CPROTON_CUPTI_LAZY", "Off", NULL},
      {"CPROTON_CUPTI_LAZY", "yes", "CPROTON_CUPTI_LAZY='yes'"},
      {"CPROTON_CUPTI_ABLATE", "norecords,nographs", NULL},
      {"CPROTON_CUPTI_ABLATE", "norecords,nothing", "'nothing' is not one of"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    setenv(cases[i].var, cases[i].value, 1);
    cp_cupti_config c;
    cp_cupti_config_from_env(&c);
    unsetenv(cases[i].var);
    if (!cases[i].says)
      cr_assert_str_empty(c.bad, "%s=%s: %s", cases[i].var, cases[i].value, c.bad);
    else
      cr_assert(strstr(c.bad, cases[i].says), "%s=%s: '%s'", cases[i].var,
                cases[i].value, c.bad);
  }
  setenv("CPROTON_CUPTI_BUFFER_KB", "128", 1);
  cp_cupti_config c;
  cp_cupti_config_from_env(&c);
  unsetenv("CPROTON_CUPTI_BUFFER_KB");
  cr_assert_eq(c.buffer_size, 128u << 10);
}
