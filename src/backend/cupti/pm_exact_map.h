/* backend/cupti/pm_exact_map.h -- `pmsampling:exact`'s pure half
 * (cp_pm_exact_map_*): a CUDA context's kernel launches kept in launch
 * order until the range profiler's counter data image is decoded, the
 * image's ranges matched to them in the same order (range i of a decode
 * is the i-th launch since the previous one: auto ranges are made one per
 * kernel, and kernel replay runs a context's kernels one at a time), and
 * each range's values delivered to its kernel's node under the storage
 * contract shared with the sampling mode:
 *   pm_sampled_ns  (int)    the kernel's duration (the whole kernel is covered)
 *   pm_samples     (int)    1 per range
 *   <name>*ns      (double) counter value x duration in ns
 * so that a viewer's value, <name>*ns / pm_sampled_ns, is the
 * duration-weighted mean over the launches a node summed.
 * No vendor call: pm_exact.c reads the image through cp_pm_exact_ranges.
 * Not thread-safe: the caller serialises a queue. */
#ifndef CP_BACKEND_CUPTI_PM_EXACT_MAP_H
#define CP_BACKEND_CUPTI_PM_EXACT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cupti/pm_metrics.h"
#include "core/session.h"

/* Counters per range (the duration aside); cp_pm_exact_start refuses more. */
#define CP_PM_EXACT_MAX_METRICS 256

/* One launch waiting for its range. */
typedef struct cp_pm_exact_launch {
  cp_launch_site site;
  uint32_t kernel; /* strtab id of the kernel's name; 0: unknown */
} cp_pm_exact_launch;

/* A context's launches since its image was last decoded; holds at most
 * `cap` (the image's ranges). */
typedef struct cp_pm_exact_queue {
  cp_pm_exact_launch *v;
  size_t n, cap;
} cp_pm_exact_queue;

/* What decodes counted; every range or launch that reached no node is in
 * one of the drop counters (reported at stop, never silent). */
typedef struct cp_pm_exact_counts {
  uint64_t ranges;         /* ranges read from decoded images */
  uint64_t delivered;      /* ranges whose values reached a kernel node */
  uint64_t cupti_dropped;  /* ranges CUPTI dropped (image full) */
  uint64_t unmatched;      /* ranges with no launch seen before them */
  uint64_t unmeasured;     /* launches that got no range */
  uint64_t graph_ranges;   /* ranges of graph launches (not attributed) */
  uint64_t eval_errors;    /* ranges CUPTI could not evaluate, 0 ns long,
                              or of a kernel whose name is unknown */
  uint64_t deliver_errors; /* values the sessions could not store */
  uint64_t name_mismatch;  /* a range named otherwise than its kernel */
} cp_pm_exact_counts;

/* A decoded counter data image as the mapper sees it. */
typedef struct cp_pm_exact_ranges {
  size_t n; /* ranges in the image */
  /* Range i's values: one per metric, then its duration in ns. 0 or an
   * error code. */
  int (*evaluate)(void *u, size_t i, double *values);
  /* Range i's name as CUPTI gives it (NULL: none). */
  const char *(*name)(void *u, size_t i);
  void *u;
} cp_pm_exact_ranges;

/* The stored metric names, "<name>*ns" for each of `metrics`. */
typedef struct cp_pm_exact_names {
  size_t n;
  char **stored;
} cp_pm_exact_names;

/* Allocates a queue of `cap` launches (1 or more). Errors: EINVAL, ENOMEM. */
int cp_pm_exact_map_queue_init(cp_pm_exact_queue *q, size_t cap);
void cp_pm_exact_map_queue_free(cp_pm_exact_queue *q);

/* Appends a launch; returns 0, or 1 when the queue is full (nothing
 * appended: decode first). `kernel` may be NULL (its name then stays
 * unknown and the range is delivered to no kernel node: counted). */
int cp_pm_exact_map_push(cp_pm_exact_queue *q, const cp_launch_site *site,
                         const char *kernel);

/* Builds "<name>*ns" for each metric. Errors: ENOMEM. */
int cp_pm_exact_map_names(const cp_pm_metric *metrics, size_t n,
                          cp_pm_exact_names *out);
void cp_pm_exact_map_names_free(cp_pm_exact_names *names);

/* Matches `r`'s ranges to `q`'s launches in order, delivers each matched
 * range's values (cp_session_deliver_metric) and empties `q`, counting
 * into `c`. `graph`: the ranges belong to a graph launch and are counted,
 * not attributed. Returns the number of ranges delivered. */
size_t cp_pm_exact_map_deliver(cp_pm_exact_queue *q,
                               const cp_pm_exact_ranges *r,
                               const cp_pm_exact_names *names, int graph,
                               cp_pm_exact_counts *c);

#endif
