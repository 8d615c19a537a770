/* backend/cupti/graphtime.c -- graph-level mode (CPROTON_CUPTI_GRAPHS=graph):
 * each cuGraphLaunch is timed by a pair of CUDA events recorded on the
 * launch's stream at the API enter and exit callbacks, instead of CUPTI's
 * graph trace, which crashed inside libcupti (docs/cupti.md, "Graph-level
 * mode"). Pairs come from a fixed pool; a launch finding none free polls
 * the oldest one in flight (cuEventQuery, never waits) and is otherwise
 * counted as not timed. Events are read off the launch path: at a flush,
 * which waits for them, or when a dry pool reclaims a finished pair.
 * The driver's event calls are not subscribed callbacks, so they never
 * re-enter cproton. */
#include <pthread.h>
#include <stdlib.h>

#include "backend/cupti/graphtime.h"
#include "core/context.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/grow.h"

#define CU_EVENT_DEFAULT 0u /* timing on: cuEventElapsedTime reads it */
#define SCAN 64 /* free pairs searched for one of the launch's context */

typedef struct slot {
  cp_cuevent ev[2]; /* start, end; NULL until created */
  void *ctx;        /* the context the events belong to */
  cp_graph_launch l;
} slot;

struct cp_graphtime {
  const cp_cudadrv *d;
  pthread_mutex_t mu;
  uint32_t free_[CP_GRAPHTIME_PAIRS], n_free;   /* stack */
  uint32_t fifo[CP_GRAPHTIME_PAIRS], head, n_pending; /* in flight */
  cp_graph_launch *done; /* read, not yet delivered */
  size_t n_done, cap_done;
  cp_graphtime_stats stats;
  slot slots[CP_GRAPHTIME_PAIRS];
};

/* The launch's pair between its enter and exit, on the launching thread. */
static _Thread_local int64_t armed = -1;

cp_graphtime *cp_graphtime_new(const cp_cudadrv *d) {
  cp_graphtime *g = calloc(1, sizeof *g);
  if (!g) {
    cp_error_set(CPROTON_ENOMEM, "graph-level mode: out of memory");
    return NULL;
  }
  g->d = d;
  pthread_mutex_init(&g->mu, NULL);
  for (uint32_t i = 0; i < CP_GRAPHTIME_PAIRS; i++)
    g->free_[i] = CP_GRAPHTIME_PAIRS - 1 - i;
  g->n_free = CP_GRAPHTIME_PAIRS;
  return g;
}

static void destroy_events(cp_graphtime *g, slot *s) {
  for (int i = 0; i < 2; i++)
    if (s->ev[i])
      g->d->cuEventDestroy(s->ev[i]);
  s->ev[0] = s->ev[1] = NULL;
}

/* The pair's events in `ctx` (current on this thread), made if needed. */
static int events_in(cp_graphtime *g, slot *s, void *ctx) {
  if (s->ev[0] && s->ev[1] && s->ctx == ctx)
    return 0;
  destroy_events(g, s);
  cp_cudevice dev = 0;
  if (g->d->cuEventCreate(&s->ev[0], CU_EVENT_DEFAULT) ||
      g->d->cuEventCreate(&s->ev[1], CU_EVENT_DEFAULT) ||
      g->d->cuCtxGetDevice(&dev)) {
    destroy_events(g, s);
    return -1;
  }
  s->ctx = ctx;
  s->l.device = (uint32_t)dev;
  return 0;
}

/* Appends a read launch to the undelivered ones; a failed growth is
 * counted as an error. */
static void keep(cp_graphtime *g, const cp_graph_launch *l) {
  void *p;
  if (g->n_done == g->cap_done) {
    if (cp_grow(g->done, &g->cap_done, g->n_done + 1, sizeof *g->done, 256,
                &p)) {
      g->stats.errors++;
      return;
    }
    g->done = p;
  }
  g->done[g->n_done++] = *l;
}

/* Reads the oldest launch in flight (waiting for it when `wait`) and frees
 * its pair. 0 when it was not finished and `wait` is off. */
static int read_oldest(cp_graphtime *g, int wait) {
  slot *s = &g->slots[g->fifo[g->head]];
  cp_context_own_calls_begin();
  cp_curesult r = wait ? g->d->cuEventSynchronize(s->ev[1])
                       : g->d->cuEventQuery(s->ev[1]);
  cp_context_own_calls_end();
  if (r && !wait)
    return 0; /* CUDA_ERROR_NOT_READY (or an error seen at the flush) */
  float ms = 0;
  if (r || g->d->cuEventElapsedTime(&ms, s->ev[0], s->ev[1]) || ms < 0)
    g->stats.errors++;
  else {
    s->l.end_ns = s->l.start_ns + (uint64_t)((double)ms * 1e6 + 0.5);
    keep(g, &s->l);
    g->stats.timed++;
  }
  g->free_[g->n_free++] = g->fifo[g->head];
  g->head = (g->head + 1) % CP_GRAPHTIME_PAIRS;
  g->n_pending--;
  return 1;
}

/* A free pair, preferably one whose events are in `ctx`; -1 when none. */
static int64_t take(cp_graphtime *g, void *ctx) {
  if (!g->n_free && !(g->n_pending && read_oldest(g, 0)))
    return -1;
  uint32_t top = g->n_free - 1, pick = top;
  for (uint32_t i = 0; i < SCAN && i <= top; i++)
    if (g->slots[g->free_[top - i]].ctx == ctx) {
      pick = top - i;
      break;
    }
  uint32_t idx = g->free_[pick];
  g->free_[pick] = g->free_[top];
  g->n_free--;
  return idx;
}

/* A launch into a stream being captured (by any thread) is itself
 * captured, not run: recording an event there would add a node to the
 * application's graph. */
static int captured(cp_graphtime *g, void *stream) {
  int status = 0;
  return g->d->cuStreamIsCapturing(stream, &status) == 0 && status != 0;
}

void cp_graphtime_enter(cp_graphtime *g, void *ctx, void *stream,
                        const cp_launch_site *site, uint32_t corr) {
  armed = -1;
  if (captured(g, stream))
    return;
  pthread_mutex_lock(&g->mu);
  int64_t idx = take(g, ctx);
  if (idx < 0) {
    g->stats.dry++;
  } else {
    slot *s = &g->slots[idx];
    if (events_in(g, s, ctx) || g->d->cuEventRecord(s->ev[0], stream)) {
      g->stats.errors++;
      g->free_[g->n_free++] = (uint32_t)idx;
    } else {
      s->l.site = *site;
      s->l.corr = corr;
      s->l.start_ns = cp_clock_now_ns();
      armed = idx;
    }
  }
  pthread_mutex_unlock(&g->mu);
}

void cp_graphtime_exit(cp_graphtime *g, void *stream, int launched) {
  if (armed < 0)
    return;
  uint32_t idx = (uint32_t)armed;
  armed = -1;
  pthread_mutex_lock(&g->mu);
  slot *s = &g->slots[idx];
  int ok = launched && !g->d->cuEventRecord(s->ev[1], stream);
  if (launched && !ok)
    g->stats.errors++;
  if (ok) {
    g->fifo[(g->head + g->n_pending) % CP_GRAPHTIME_PAIRS] = idx;
    g->n_pending++;
  } else {
    g->free_[g->n_free++] = idx;
  }
  pthread_mutex_unlock(&g->mu);
}

uint64_t cp_graphtime_drain(cp_graphtime *g, cp_graphtime_deliver_fn fn,
                            void *user) {
  pthread_mutex_lock(&g->mu);
  while (g->n_pending)
    read_oldest(g, 1);
  cp_graph_launch *done = g->done;
  size_t n = g->n_done;
  g->done = NULL, g->n_done = g->cap_done = 0;
  pthread_mutex_unlock(&g->mu);
  for (size_t i = 0; i < n; i++)
    fn(user, &done[i]);
  free(done);
  return n;
}

void cp_graphtime_free(cp_graphtime *g, cp_graphtime_deliver_fn fn,
                       void *user) {
  if (!g)
    return;
  cp_graphtime_drain(g, fn, user);
  for (uint32_t i = 0; i < CP_GRAPHTIME_PAIRS; i++)
    destroy_events(g, &g->slots[i]);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

void cp_graphtime_stats_get(const cp_graphtime *g, cp_graphtime_stats *out) {
  pthread_mutex_lock((pthread_mutex_t *)&g->mu);
  *out = g->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&g->mu);
}

void cp_graphtime_stats_reset(cp_graphtime *g) {
  pthread_mutex_lock(&g->mu);
  g->stats = (cp_graphtime_stats){0};
  pthread_mutex_unlock(&g->mu);
}
