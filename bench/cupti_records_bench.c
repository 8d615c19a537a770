/* cupti_records_bench.c -- host cost per kernel record on the records
 * thread (records.c: correlation lookup, delivery into the profile), record
 * by record and in adaptive mode (CPROTON_CUPTI_ADAPTIVE=N), on synthetic
 * streams; and per replayed graph kernel (a graph of GRAPH_NODES nodes
 * captured under a 4-deep scope path, replayed until N_RECS records): all
 * of a record's processing, and the graph part alone, now (cp_graph_resolve:
 * hot cache, memo) and as every replayed kernel paid it before issue 23 (a
 * locked lookup and cp_graph_compose per record); delivery alone; a graph
 * built before the session (its nodes unknown: the fresh-process GPT's
 * case); and the launching thread's cuGraphLaunch callbacks. No GPU, no libcupti
 * (CUPTI headers only). Medians of interleaved runs.
 * Usage: cupti_records_bench [runs] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cupti/adaptive.h"
#include "backend/cupti/callbacks.h"
#include "backend/cupti/records.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "cupti_synth.h"

typedef CUpti_ActivityKernel10 krec;
enum { N_RECS = 60000 };

static cp_cupti_state st;
static krec recs[N_RECS];

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int describe(uint32_t id, cp_device_info *d) {
  (void)id;
  snprintf(d->arch, sizeof d->arch, "90");
  return 0;
}

/* Captures N_RECS launches (1 key, or 2 scopes x 2 kernels x 2 grids). */
static void make_stream(int alternating) {
  for (uint32_t i = 0; i < N_RECS; i++) {
    const char *scope = alternating && i % 2 ? "fwd" : "bwd";
    cproton_scope_enter(scope, NULL);
    CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                            .correlationId = i + 1};
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
    cproton_scope_exit(scope);
    krec *k = &recs[i];
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->name = alternating && i % 3 == 0
                  ? "void at::native::softmax_kernel<float>(float*, int)"
                  : "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn";
    k->correlationId = i + 1;
    k->gridX = alternating && i % 7 == 0 ? 66 : 132;
    k->gridY = k->gridZ = k->blockX = k->blockY = k->blockZ = 1;
    k->start = 1000 + 100ull * i;
    k->end = k->start + 1000 + i % 37;
  }
}

/* ns per record for one pass over the stream, adaptive N (0: off). */
static double pass(unsigned n) {
  if (n && cp_adaptive_new(n, &st.adaptive))
    return -1;
  double t0 = now_ns();
  for (size_t i = 0; i < N_RECS; i += 512) {
    size_t m = N_RECS - i < 512 ? N_RECS - i : 512;
    cp_records_process(&st, (uint8_t *)&recs[i], m * sizeof(krec), cpt_next_kernel);
  }
  if (st.adaptive)
    cp_adaptive_flush(st.adaptive);
  double t = (now_ns() - t0) / N_RECS;
  cp_adaptive_free(st.adaptive);
  st.adaptive = NULL;
  return t;
}

/* A graph of GRAPH_NODES kernel nodes captured under a/b/c/d, replayed
 * under "replay" (one launch and correlation id per replay), a record per
 * node and replay. */
enum { GRAPH_NODES = 2000 };
static cp_launch_site capture_site, launch_site;

static void make_graph_stream(void) {
  static const char *path[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++)
    cproton_scope_enter(path[i], NULL);
  cp_session_capture(&capture_site);
  for (uint32_t i = 0; i < GRAPH_NODES; i++)
    cp_graph_put(st.graphs, i + 1, &capture_site);
  for (int i = 3; i >= 0; i--)
    cproton_scope_exit(path[i]);
  cproton_scope_enter("replay", NULL);
  for (uint32_t r = 0; r < N_RECS / GRAPH_NODES; r++) {
    CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                            .correlationId = 100 + r};
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &d);
  }
  cp_session_capture(&launch_site);
  cproton_scope_exit("replay");
  for (uint32_t i = 0; i < N_RECS; i++) {
    krec *k = &recs[i];
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->name = "nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_NNT";
    k->correlationId = 100 + i / GRAPH_NODES;
    k->graphId = 1;
    k->graphNodeId = i % GRAPH_NODES + 1;
    k->gridX = k->gridY = k->gridZ = k->blockX = k->blockY = k->blockZ = 1;
    k->start = 1000 + 100ull * i;
    k->end = k->start + 1000;
  }
}

/* The graph of make_graph_stream as if built before the session started
 * (bench/fresh_process.py's GPT: captured during warm-up): its nodes are
 * not in the table, so each record takes the "unknown graph" path. */
static void make_unknown_graph_stream(void) {
  for (uint32_t i = 0; i < N_RECS; i++) {
    recs[i].graphId = 2;
    recs[i].graphNodeId = GRAPH_NODES + 1 + i % GRAPH_NODES;
  }
}

/* ns per graph launch on the launching thread: cproton's cuGraphLaunch
 * enter and exit callbacks (capture, correlation store; lazy mode off). */
static double pass_launch(uint32_t first_corr) {
  enum { LAUNCHES = 20000 };
  cp_corr_clear(st.corr); /* no spills: the ring wraps after 2M launches */
  cproton_scope_enter("replay", NULL);
  double t0 = now_ns();
  for (uint32_t i = 0; i < LAUNCHES; i++) {
    CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                            .correlationId = first_corr + i};
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &d);
    d.callbackSite = CUPTI_API_EXIT;
    cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &d);
  }
  double t = (now_ns() - t0) / LAUNCHES;
  cproton_scope_exit("replay");
  return t;
}

/* ns per record for delivery alone (cp_session_deliver_kernel: the tree
 * node, the metrics), the last part of every record's processing. */
static double pass_deliver(void) {
  cp_kernel_record r = {.name = recs[0].name, .start_ns = 1, .end_ns = 2};
  double t0 = now_ns();
  for (size_t i = 0; i < N_RECS; i++)
    cp_session_deliver_kernel(&launch_site, &r);
  return (now_ns() - t0) / N_RECS;
}

/* ns per replayed node for the graph part alone: `memo` 1 resolves
 * (cp_graph_resolve: hot cache, memo), 0 does what every replayed kernel
 * did before issue 23 (a locked lookup copying the capture site, then the
 * composition). */
static double pass_graph_part(int memo) {
  cp_launch_site out, capture;
  double t0 = now_ns();
  for (size_t i = 0; i < N_RECS; i++) {
    uint64_t node = i % GRAPH_NODES + 1;
    if (memo)
      cp_graph_resolve(st.graphs, node, &launch_site, &out, NULL);
    else if (cp_graph_get(st.graphs, node, &capture))
      cp_graph_compose(&launch_site, &capture, 1, &out);
  }
  return (now_ns() - t0) / N_RECS;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 9;
  if (runs < 1 || runs > 99)
    runs = 9;
  static const unsigned modes[] = {0, 4, 16, 64};
  enum { MODES = sizeof modes / sizeof *modes };
  st.corr = cp_corr_new(1u << 16);
  st.graphs = cp_graph_new(1u << 17, 1u << 18);
  st.hooks.describe_device = describe;
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = "/tmp/cupti_records_bench";
  o.backend = "none";
  int sid;
  if (cproton_session_start(&o, &sid)) {
    fprintf(stderr, "%s\n", cproton_last_error());
    return 1;
  }
  for (int alt = 0; alt < 2; alt++) {
    make_stream(alt);
    double t[MODES][99];
    for (int r = 0; r < runs; r++)
      for (int m = 0; m < MODES; m++)
        t[m][r] = pass(modes[m]);
    printf("%s stream (%d records, median of %d):\n",
           alt ? "alternating" : "stable", N_RECS, runs);
    for (int m = 0; m < MODES; m++) {
      qsort(t[m], (size_t)runs, sizeof t[m][0], cmp);
      if (m)
        printf("  adaptive N=%-6u %6.1f ns/record\n", modes[m],
               t[m][runs / 2]);
      else
        printf("  record by record %6.1f ns/record\n", t[m][runs / 2]);
    }
  }
  make_graph_stream();
  double g[6][99];
  for (int r = 0; r < runs; r++) {
    g[0][r] = pass(0);
    g[1][r] = pass_graph_part(1);
    g[2][r] = pass_graph_part(0);
    g[3][r] = pass_deliver();
    g[4][r] = pass_launch(1000000u + 20000u * (uint32_t)r);
  }
  make_unknown_graph_stream();
  for (int r = 0; r < runs; r++)
    g[5][r] = pass(0);
  for (int i = 0; i < 6; i++)
    qsort(g[i], (size_t)runs, sizeof g[i][0], cmp);
  printf("graph replays (%d nodes under a 4-deep capture path, %d records, "
         "median of %d):\n"
         "  replayed kernel record   %6.1f ns/record (all of it, now)\n"
         "  graph part, now          %6.1f ns/record (hot cache, memo)\n"
         "  graph part, before       %6.1f ns/record (lookup + composition)\n",
         GRAPH_NODES, N_RECS, runs, g[0][runs / 2], g[1][runs / 2],
         g[2][runs / 2]);
  printf("  delivery alone           %6.1f ns/record\n"
         "  graph built before start %6.1f ns/record (all of it: unknown "
         "graph)\n"
         "  graph launch callbacks   %6.1f ns/launch (enter + exit, "
         "launching thread)\n",
         g[3][runs / 2], g[5][runs / 2], g[4][runs / 2]);
  printf("RESULT records_bench graph_record_ns=%.1f graph_part_ns=%.1f "
         "graph_part_before_ns=%.1f deliver_ns=%.1f unknown_graph_ns=%.1f "
         "launch_ns=%.1f\n",
         g[0][runs / 2], g[1][runs / 2], g[2][runs / 2], g[3][runs / 2],
         g[5][runs / 2], g[4][runs / 2]);
  cproton_session_finalize(sid, NULL);
  return 0;
}
