/* backend/cupti/graphtime.h -- graph-level mode's timing of graph launches
 * with a pair of CUDA events around each cuGraphLaunch (docs/cupti.md,
 * "Graph-level mode"). */
#ifndef CP_BACKEND_CUPTI_GRAPHTIME_H
#define CP_BACKEND_CUPTI_GRAPHTIME_H

#include <stdint.h>

#include "backend/cudadrv.h"
#include "core/session.h"

/* Event pairs alive at once (in use, or read and free for reuse). */
#define CP_GRAPHTIME_PAIRS 4096

typedef struct cp_graphtime cp_graphtime;

typedef struct cp_graphtime_stats {
  uint64_t timed;  /* launches read back and delivered */
  uint64_t dry;    /* launches not timed: every pair in flight */
  uint64_t errors; /* CUDA calls that failed (the launch is not timed) */
} cp_graphtime_stats;

/* One timed launch, on the session's clock. */
typedef struct cp_graph_launch {
  cp_launch_site site;
  uint64_t start_ns, end_ns;
  uint32_t corr, device;
} cp_graph_launch;

typedef void (*cp_graphtime_deliver_fn)(void *user, const cp_graph_launch *l);

/* NULL when out of memory (cp_error set). `d` is kept. */
cp_graphtime *cp_graphtime_new(const cp_cudadrv *d);
/* Drains (cp_graphtime_drain with `fn`) and destroys the events. */
void cp_graphtime_free(cp_graphtime *g, cp_graphtime_deliver_fn fn,
                       void *user);

/* At cuGraphLaunch's API enter, on the launching thread with `ctx` current:
 * records the start event on `stream` (resolved: CU_STREAM_PER_THREAD for
 * a _ptsz launch's NULL stream). Never blocks on the GPU. */
void cp_graphtime_enter(cp_graphtime *g, void *ctx, void *stream,
                        const cp_launch_site *site, uint32_t corr);
/* At its API exit: records the end event when the launch succeeded. */
void cp_graphtime_exit(cp_graphtime *g, void *stream, int launched);

/* Waits for every recorded launch, hands each to `fn` in launch order and
 * frees its pair. Returns how many were delivered. */
uint64_t cp_graphtime_drain(cp_graphtime *g, cp_graphtime_deliver_fn fn,
                            void *user);
void cp_graphtime_stats_get(const cp_graphtime *g, cp_graphtime_stats *out);
/* At a start: the counts are per run, as the backend's other stats. */
void cp_graphtime_stats_reset(cp_graphtime *g);

#endif
