/* backend/cupti/stats.c -- formats the CUPTI backend's counters into the
 * single end-of-run warning.
 * Invariant: a non-zero problem counter always produces the warning.
 * Not a hot path: called at backend stop. Called by cupti_backend.c and tests. */
#include <stdio.h>
#include <string.h>

#include "backend/cupti/stats.h"
#include "core/log.h"

void cp_stats_reset(cp_cupti_stats *s) {
  atomic_store(&s->kernels, 0);
  atomic_store(&s->unattributed, 0);
  atomic_store(&s->collisions, 0);
  atomic_store(&s->dropped, 0);
  atomic_store(&s->graph_full, 0);
  atomic_store(&s->graph_nodes, 0);
  atomic_store(&s->graph_clones, 0);
  atomic_store(&s->graph_misses, 0);
  atomic_store(&s->graph_lost, 0);
  atomic_store(&s->graph_records, 0);
  atomic_store(&s->deliver_errors, 0);
  atomic_store(&s->nvtx_unmatched, 0);
  atomic_store(&s->no_buffer, 0);
  atomic_store(&s->lazy_ranges, 0);
  atomic_store(&s->lazy_records, 0);
  atomic_store(&s->lazy_toggle_errors, 0);
  atomic_store(&s->lazy_misses, 0);
  atomic_store(&s->lazy_suspended, 0);
  atomic_store(&s->adaptive_errors, 0);
}

static void part(char *out, size_t size, unsigned long long n,
                 const char *what) {
  size_t len = strlen(out);
  if (n && len + 2 < size)
    snprintf(out + len, size - len, "%s%llu %s", len ? "; " : "", n, what);
}

int cp_stats_report(const cp_cupti_stats *s, size_t ring_slots) {
  char msg[1024] = "", why[128];
  part(msg, sizeof msg, atomic_load(&s->dropped),
       "kernel records dropped by CUPTI (activity buffers full)");
  part(msg, sizeof msg, atomic_load(&s->no_buffer),
       "activity buffer requests refused (pool exhausted)");
  snprintf(why, sizeof why,
           "kernel records unattributed, placed under ROOT "
           "(launch not seen, or its entry expired: far more than %zu "
           "launches in flight)",
           ring_slots);
  part(msg, sizeof msg, atomic_load(&s->unattributed), why);
  part(msg, sizeof msg, atomic_load(&s->collisions),
       "correlation entries a record needed lost (ring slot reused and its "
       "spill map full)");
  part(msg, sizeof msg, atomic_load(&s->graph_lost),
       "replayed graph kernels placed without <captured_at> and their "
       "capture path (their node's entry was evicted: graph table full)");
  part(msg, sizeof msg, atomic_load(&s->graph_full),
       "graph nodes without capture context (graph table full)");
  part(msg, sizeof msg, atomic_load(&s->deliver_errors),
       "kernel records the profile could not store (out of memory)");
  part(msg, sizeof msg, atomic_load(&s->nvtx_unmatched),
       "nvtxRangePop calls without an open range");
  part(msg, sizeof msg, atomic_load(&s->lazy_toggle_errors),
       "launch callbacks CUPTI refused to switch (lazy mode)");
  part(msg, sizeof msg, atomic_load(&s->adaptive_errors),
       "batches of kernel records the profile could not store (adaptive "
       "mode, out of memory)");
  part(msg, sizeof msg, atomic_load(&s->lazy_misses),
       "records lazy mode could not place (the driver handed out ids out of "
       "launch order; lazy mode suspended itself, callbacks stayed on)");
  part(msg, sizeof msg, atomic_load(&s->lazy_suspended),
       "lazy mode suspension (the driver's correlation ids broke its model: "
       "callbacks on from then; kernels placed by repeated ids may sit at the "
       "wrong site, so rerun without CPROTON_CUPTI_LAZY; docs/cupti.md)");
  if (atomic_load(&s->lazy_ranges))
    cp_info("cupti: lazy launch callbacks: switched off %llu times, %llu "
            "kernel records placed by correlation-id range",
            (unsigned long long)atomic_load(&s->lazy_ranges),
            (unsigned long long)atomic_load(&s->lazy_records));
  cp_debug("cupti: %llu kernel records processed; graph nodes: %llu "
           "remembered, %llu cloned, %llu replayed kernels without a "
           "capture-time context (graphs built before profiling started); "
           "%llu graph launch records (graph-level mode)",
           (unsigned long long)atomic_load(&s->kernels),
           (unsigned long long)atomic_load(&s->graph_nodes),
           (unsigned long long)atomic_load(&s->graph_clones),
           (unsigned long long)atomic_load(&s->graph_misses),
           (unsigned long long)atomic_load(&s->graph_records));
  if (!msg[0])
    return 0;
  cp_warn("cupti: of %llu kernel records: %s",
          (unsigned long long)atomic_load(&s->kernels), msg);
  return 1;
}
