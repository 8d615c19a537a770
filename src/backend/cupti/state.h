/* backend/cupti/state.h -- the state the CUPTI backend's pure parts share
 * (no functions): the correlation and graph tables, the hooks through which
 * they reach the vendor libraries, and the counters reported at stop.
 *
 * The hooks are what makes records.c and callbacks.c callable without
 * libcupti: backend/cupti/cupti_backend.c points them at dlsym'd functions, unit
 * tests at fakes. */
#ifndef CP_BACKEND_CUPTI_STATE_H
#define CP_BACKEND_CUPTI_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cupti/corr.h"
#include "backend/cupti/graph.h"
#include "core/device.h"

typedef struct cp_cupti_stats {
  atomic_ullong kernels;        /* kernel records delivered */
  atomic_ullong unattributed;   /* correlation id unknown or slot reused */
  atomic_ullong collisions;     /* live correlation entries overwritten */
  atomic_ullong dropped;        /* CUPTI's own dropped-record count */
  atomic_ullong graph_full;     /* graph nodes not remembered: table full */
  atomic_ullong deliver_errors; /* records the core could not store */
  atomic_ullong nvtx_unmatched; /* nvtxRangePop with no open range */
  atomic_ullong no_buffer;      /* buffer requests the pool refused */
  atomic_ullong graph_nodes;    /* kernel graph nodes remembered */
  atomic_ullong graph_clones;   /* remembered nodes copied at instantiate */
  atomic_ullong graph_misses;   /* graph kernels of graphs built before start */
  atomic_ullong graph_lost;     /* graph kernels whose node entry was evicted */
  atomic_ullong graph_records;  /* graph-level mode: graph launch records */
  atomic_ullong lazy_ranges;    /* lazy mode: callbacks switched off */
  atomic_ullong lazy_records;   /* lazy mode: records placed by id range */
  atomic_ullong lazy_toggle_errors; /* lazy mode: cuptiEnableCallback failed */
  atomic_ullong lazy_misses;    /* lazy mode: uncaptured ids in no range */
  atomic_ullong lazy_suspended; /* lazy mode: suspended (driver broke order) */
  atomic_ullong adaptive_errors; /* adaptive mode: batches not stored */
} cp_cupti_stats;

typedef struct cp_cupti_hooks {
  /* Describes device `id` (cuDeviceGetAttribute). 0 or an error code. */
  int (*describe_device)(uint32_t id, cp_device_info *out);
  /* The CUPTI id of a graph node (cuptiGetGraphNodeId). 0 or an error. */
  int (*graph_node_id)(void *node, uint64_t *id_out);
  /* PC sampling (NULL when off): a cubin was loaded (module-load
   * callback); a launch or a new context names a CUDA context, so that
   * sampling is configured once per context. */
  void (*module_loaded)(const void *cubin, size_t size);
  void (*_Atomic launch_context)(void *cu_context);
  /* PC sampling, exact mode: called at a launch's API enter (`enter` 1,
   * with the kernel's name, NULL for a graph launch, and its site) and
   * exit (0, site NULL) on the launching thread. NULL when off. */
  void (*_Atomic launch_bracket)(void *cu_context, uint32_t correlation,
                                 const char *kernel,
                                 const cp_launch_site *site, int enter);
  /* PC sampling: a kernel record with its final site, duration, grid
   * (blocks), block (threads), device and correlation id (concurrent mode
   * weights). NULL when off. */
  void (*_Atomic kernel_ran)(const char *name, const void *site, uint64_t ns,
                             uint64_t blocks, uint32_t threads,
                             uint32_t device, uint32_t corr);
  /* Lazy mode (lazy.h): switches driver-API launch callback `cbid` on or
   * off (cuptiEnableCallback). 0 or an error code. */
  int (*launch_callbacks)(uint32_t cbid, int on);
} cp_cupti_hooks;

/* Graphs built before profiling that records.c warns about, per run. */
#define CP_WARNED_GRAPHS 16

typedef struct cp_cupti_state {
  cp_corr *corr;
  struct cp_adaptive *adaptive; /* adaptive mode's batches, or NULL */
  cp_graph *graphs;
  cp_cupti_hooks hooks;
  _Atomic uint64_t devices_seen; /* bit d: device d registered */
  cp_cupti_stats stats;
  unsigned ablate; /* cp_cupti_ablate bits (config.h): measurements only */
  int graph_level; /* one record per graph launch (CPROTON_CUPTI_GRAPHS) */
  struct cp_graphtime *gtime; /* graph-level mode's event pairs, or NULL */
  _Atomic uint32_t warned_graphs[CP_WARNED_GRAPHS]; /* graph id + 1 */
} cp_cupti_state;

#endif
