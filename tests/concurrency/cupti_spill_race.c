/* cupti_spill_race.c -- the correlation ring's spill (backend/cupti/corr.c)
 * and the graph-node table (graph.c) under racing threads, as a plain
 * program for ThreadSanitizer (`make tsan`): a launching thread stores
 * N_IDS correlation ids in a 64-slot ring (almost every store spills the
 * entry it replaces) while a records thread, lagging behind, looks each id
 * up: every lookup must find its own site, from the ring or the spill.
 * Meanwhile a graph thread creates, kills and flushes graph nodes while a
 * resolver composes the replays of nodes that are alive: every one must be
 * composed. Exit status 0 = pass. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "backend/cupti/corr.h"
#include "backend/cupti/graph.h"
#include "core/cct.h"
#include "cproton/cproton.h"

enum { N_IDS = 200000, LAG = 3000, N_NODES = 20000 };

static cp_corr *corr;
static cp_graph *graphs;
static atomic_uint put_upto;   /* ids 1..put_upto stored */
static atomic_uint read_upto;  /* ids 1..read_upto looked up */
static atomic_uint nodes_upto; /* graph nodes 1..nodes_upto stored */
static atomic_int failures;

static void *launcher(void *arg) {
  (void)arg;
  for (uint32_t id = 1; id <= N_IDS; id++) {
    cp_launch_site s = {.sessions = 1, .thread = id};
    if (cp_corr_put(corr, id, &s, 0) == CP_CORR_COLLISION)
      atomic_fetch_add(&failures, 1);
    atomic_store_explicit(&put_upto, id, memory_order_release);
    /* at most 2 x LAG ahead of the reader: the ring wraps, the spill
     * holds the rest */
    while (id > 2 * LAG &&
           id - 2 * LAG > atomic_load_explicit(&read_upto, memory_order_acquire))
      ;
  }
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  for (uint32_t id = 1; id <= N_IDS; id++) {
    while (atomic_load_explicit(&put_upto, memory_order_acquire) < id + LAG &&
           atomic_load_explicit(&put_upto, memory_order_acquire) < N_IDS)
      ;
    cp_launch_site out;
    if (!cp_corr_get(corr, id, &out) || out.thread != id) {
      if (atomic_fetch_add(&failures, 1) < 5)
        fprintf(stderr, "cupti_spill_race: id %u not found\n", id);
    }
    atomic_store_explicit(&read_upto, id, memory_order_release);
  }
  return NULL;
}

static cp_launch_site capture, launch;

static void *graph_builder(void *arg) {
  (void)arg;
  for (uint32_t n = 1; n <= N_NODES; n++) {
    cp_graph_put(graphs, n, &capture);
    atomic_store_explicit(&nodes_upto, n, memory_order_release);
    if (n > 100) {
      uint32_t gen = cp_graph_flush_begin(graphs);
      cp_graph_kill(graphs, n - 100); /* killed during the flush: kept */
      cp_graph_flushed(graphs, gen);
    }
  }
  return NULL;
}

static void *resolver(void *arg) {
  (void)arg;
  for (int round = 0; round < 3; round++)
    for (uint32_t n = 1; n <= N_NODES; n++) {
      while (atomic_load_explicit(&nodes_upto, memory_order_acquire) < n)
        ;
      cp_launch_site out;
      int rc = cp_graph_resolve(graphs, n, &launch, &out, NULL);
      /* nodes killed before a later flush may be gone (unknown now); a
       * composed site is never the bare launch site */
      int bad = rc == CP_GRAPH_COMPOSED ? out.node[0] == launch.node[0]
                                        : rc != CP_GRAPH_UNKNOWN ||
                                              out.node[0] != launch.node[0];
      if (bad)
        atomic_fetch_add(&failures, 1);
    }
  return NULL;
}

int main(void) {
  corr = cp_corr_new(64);
  graphs = cp_graph_new(64, 1u << 16);
  if (!corr || !graphs)
    return 1;
  capture.node[0] = cp_cct_child_str(cp_cct_root(), "capture");
  launch.node[0] = cp_cct_child_str(cp_cct_root(), "launch");
  capture.sessions = launch.sessions = 1;
  pthread_t t[4];
  pthread_create(&t[0], NULL, launcher, NULL);
  pthread_create(&t[1], NULL, reader, NULL);
  pthread_create(&t[2], NULL, graph_builder, NULL);
  pthread_create(&t[3], NULL, resolver, NULL);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  int bad = atomic_load(&failures);
  printf("cupti_spill_race: %llu spilled, %zu left in the spill, %d "
         "failures\n",
         (unsigned long long)cp_corr_spilled(corr), cp_corr_spill_count(corr),
         bad);
  cp_corr_free(corr);
  cp_graph_free(graphs);
  return bad != 0;
}
