/* backend/cupti/records.c -- activity records -> cp_kernel_record, with a
 * table from activity kind to handler.
 * Invariant: every kernel record is either delivered under the site its
 * correlation id maps to, skipped because no session was active at its
 * launch, or delivered under ROOT and counted as unattributed: never lost
 * silently.
 * Hot-ish path: runs per record on CUPTI's thread (buffer completion) or on
 * the thread that flushes. Called by backend/cupti/cupti_backend.c. */
#include <limits.h>
#include <stdint.h>

#include "backend/cupti/adaptive.h"
#include "backend/cupti/lazy.h"
#include "backend/cupti/pm_attr.h"
#include "backend/cupti/records.h"
#include "core/kfacts.h"
#include "core/log.h"
#include "core/session.h"
#include "core/tmetric.h"
#include "core/tmetric_replay.h"

/* Kernel records of every CUPTI since CUDA 11 (CUpti_ActivityKernel4..10)
 * share the layout of the fields read here; the newest struct names them. */
typedef CUpti_ActivityKernel10 kernel_record;

/* Delivered to every session alive at processing: the launch is unknown. */
static const cp_launch_site unattributed_site = {.sessions = UINT32_MAX,
                                                 .epoch = UINT32_MAX};

void cp_records_note_device(cp_cupti_state *st, uint32_t id) {
  uint64_t bit = id < 64 ? 1ull << id : 0;
  if (bit &&
      (atomic_load_explicit(&st->devices_seen, memory_order_relaxed) & bit))
    return;
  if (bit && (atomic_fetch_or(&st->devices_seen, bit) & bit))
    return;
  cp_device_info d = {.type = CP_DEVICE_CUDA, .id = id};
  if (!st->hooks.describe_device || st->hooks.describe_device(id, &d) != 0) {
    cp_warn("cupti: could not describe device %u; its info is missing from "
            "the profile",
            id);
    return;
  }
  d.type = CP_DEVICE_CUDA;
  d.id = id;
  cp_device_register(&d);
}

/* Graphs built before profiling began: Proton 3.9 says so once per graph
 * ("Cannot find graph for graphExecId"); so does cproton, for the first
 * CP_WARNED_GRAPHS graphs of a run (the rest are in the debug count). */
static void note_unknown_graph(cp_cupti_state *st, uint32_t graph_id) {
  for (int i = 0; i < CP_WARNED_GRAPHS; i++) {
    uint32_t w = atomic_load_explicit(&st->warned_graphs[i],
                                      memory_order_relaxed);
    if (w == graph_id + 1)
      return;
    if (!w && atomic_compare_exchange_strong(&st->warned_graphs[i], &w,
                                             graph_id + 1)) {
      cp_warn("cupti: Cannot find graph for graphExecId: %u: its kernels "
              "land under the launch context without <captured_at>; to see "
              "where they were captured, start profiling before the graph "
              "is created",
              (unsigned)graph_id);
      return;
    }
  }
}

/* A replayed copy kernel of captured tensor-metric slot `slot`, launched at
 * `launch`: its record lands at <launch>/<captured_at>/<the slot's path>,
 * where the graph's kernels land (core/tmetric_replay.h). A place that
 * cannot be composed or queued is counted there (the fold warns). */
static void replay_place(cp_cupti_state *st, uint32_t slot,
                         const cp_launch_site *launch) {
  const cp_tmetric_slot *s = cp_tmetric_get(slot);
  cp_launch_site capture = {0}, out;
  cp_node *none[CP_CONTEXT_KINDS] = {0};
  if (!s)
    return;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    capture.node[k] = (cp_node *)s->node[k];
  if (cp_graph_compose(launch, &capture, 1, &out) == 0) {
    cp_tmetric_replay_push(slot, out.node);
  } else {
    atomic_fetch_add_explicit(&st->stats.deliver_errors, 1,
                              memory_order_relaxed);
    cp_tmetric_replay_push(slot, none); /* keeps the slot's FIFO in step */
  }
}

/* Composes a replayed kernel's launch site with its node's capture site;
 * counts what could not be composed. */
static void graph_site(cp_cupti_state *st, const kernel_record *k,
                       cp_launch_site *site) {
  cp_launch_site out;
  uint32_t slot;
  int rc = cp_graph_resolve(st->graphs, k->graphNodeId, site, &out, &slot);
  if (slot != CPROTON_TENSOR_METRIC_NONE)
    replay_place(st, slot, site);
  if (rc == CP_GRAPH_UNKNOWN) {
    atomic_fetch_add_explicit(&st->stats.graph_misses, 1,
                              memory_order_relaxed);
    note_unknown_graph(st, k->graphId);
  } else if (rc == CP_GRAPH_LOST) {
    atomic_fetch_add_explicit(&st->stats.graph_lost, 1, memory_order_relaxed);
  } else if (rc < 0) {
    atomic_fetch_add_explicit(&st->stats.deliver_errors, 1,
                              memory_order_relaxed);
  }
  *site = out;
}

/* The site of a record's launch; an unknown id is counted and delivered to
 * every live session under ROOT. 0 = skip the record (no session was
 * active at the launch). */
static int launch_site(cp_cupti_state *st, uint32_t corr,
                       cp_launch_site *site) {
  if (!cp_corr_get(st->corr, corr, site) &&
      !cp_lazy_lookup(st, corr, site)) {
    atomic_fetch_add_explicit(&st->stats.unattributed, 1, memory_order_relaxed);
    *site = unattributed_site;
    return 1;
  }
  return site->sessions != 0;
}

/* The site of a kernel: its launch, composed with its graph node's capture
 * context when it was replayed from a graph. 0 = skip the record. */
static int site_of(cp_cupti_state *st, const kernel_record *k,
                   cp_launch_site *site) {
  if (!launch_site(st, k->correlationId, site))
    return 0;
  if (k->graphId && st->graphs && site->sessions != UINT32_MAX)
    graph_site(st, k, site);
  return 1;
}

/* Grid and block sizes (CUPTI reports them as signed ints; 0 when not). */
static uint64_t blocks_of(const kernel_record *k) {
  int64_t n = (int64_t)k->gridX * k->gridY * k->gridZ;
  return n > 0 ? (uint64_t)n : 0;
}
static uint32_t threads_of(const kernel_record *k) {
  int64_t n = (int64_t)k->blockX * k->blockY * k->blockZ;
  return n > 0 && n <= UINT32_MAX ? (uint32_t)n : 0;
}

/* The kernel's launch facts for the advisor (core/kfacts.h): kept once per
 * kernel name, the distinct configurations counted; a record delivered to
 * a session (`timed`) adds its duration to its compiled variant's time. */
static void note_facts(const kernel_record *k, int timed) {
  cp_kfacts_launch l = {
      .regs = k->registersPerThread,
      .smem_static = k->staticSharedMemory,
      .smem_dynamic = k->dynamicSharedMemory,
      .local_bytes = k->localMemoryPerThread,
      .grid = {k->gridX > 0 ? (uint32_t)k->gridX : 0,
               k->gridY > 0 ? (uint32_t)k->gridY : 0,
               k->gridZ > 0 ? (uint32_t)k->gridZ : 0},
      .block = {k->blockX > 0 ? (uint32_t)k->blockX : 0,
                k->blockY > 0 ? (uint32_t)k->blockY : 0,
                k->blockZ > 0 ? (uint32_t)k->blockZ : 0},
      .duration_ns = k->end > k->start ? k->end - k->start : 0,
      .timed = timed};
  if (k->name)
    cp_kfacts_launch_note(k->name, &l);
}

static void on_kernel(cp_cupti_state *st, const CUpti_Activity *rec) {
  const kernel_record *k = (const kernel_record *)rec;
  if (k->graphId && st->graph_level)
    return; /* graph-level mode: the graph's own record counts it */
  cp_records_note_device(st, k->deviceId);
  cp_launch_site site;
  int delivered = site_of(st, k, &site);
  note_facts(k, delivered);
  if (!delivered)
    return;
  /* hardware metrics: every launch's interval, before adaptive batching */
  cp_pm_attr_kernel(k->name, &site, k->start, k->end, k->deviceId);
  cp_kernel_record r = {.name = k->name,
                        .start_ns = k->start,
                        .end_ns = k->end,
                        .device_id = k->deviceId,
                        .stream_id = k->streamId,
                        .correlation_id = k->correlationId,
                        .graph_id = k->graphId,
                        .device_type = CP_DEVICE_CUDA};
  void (*ran)(const char *, const void *, uint64_t, uint64_t, uint32_t,
              uint32_t, uint32_t) =
      atomic_load_explicit(&st->hooks.kernel_ran, memory_order_relaxed);
  /* adaptive mode: not for unattributed records, trace sessions (each
   * launch's time is kept) or PC sampling (weighs each record) */
  int rc;
  if (st->adaptive && !ran && !site.launch_ns &&
      site.sessions != UINT32_MAX &&
      cp_adaptive_take(st->adaptive, &site, &r, blocks_of(k), threads_of(k),
                       &rc)) {
    if (rc)
      atomic_fetch_add_explicit(&st->stats.adaptive_errors, 1,
                                memory_order_relaxed);
    atomic_fetch_add_explicit(&st->stats.kernels, 1, memory_order_relaxed);
    return;
  }
  if (ran)
    ran(k->name, &site, k->end > k->start ? k->end - k->start : 0,
        blocks_of(k), threads_of(k), k->deviceId, k->correlationId);
  if (cp_session_deliver_kernel(&site, &r) != 0)
    atomic_fetch_add_explicit(&st->stats.deliver_errors, 1,
                              memory_order_relaxed);
  atomic_fetch_add_explicit(&st->stats.kernels, 1, memory_order_relaxed);
}

/* Graph-level mode (CPROTON_CUPTI_GRAPHS=graph): one timed graph launch
 * (graphtime.c), delivered as a kernel named CP_RECORDS_GRAPH_NAME under
 * the launch's context. */
void cp_records_graph_launch(void *state, const cp_graph_launch *l) {
  cp_cupti_state *st = state;
  if (l->device < 64)
    cp_records_note_device(st, l->device);
  cp_kernel_record r = {.name = CP_RECORDS_GRAPH_NAME,
                        .start_ns = l->start_ns,
                        .end_ns = l->end_ns,
                        .device_id = l->device,
                        .correlation_id = l->corr,
                        .device_type = CP_DEVICE_CUDA};
  if (cp_session_deliver_kernel(&l->site, &r) != 0)
    atomic_fetch_add_explicit(&st->stats.deliver_errors, 1,
                              memory_order_relaxed);
  atomic_fetch_add_explicit(&st->stats.graph_records, 1, memory_order_relaxed);
}

typedef void (*record_fn)(cp_cupti_state *, const CUpti_Activity *);

static const struct {
  CUpti_ActivityKind kind;
  record_fn fn;
} handlers[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, on_kernel},
    {CUPTI_ACTIVITY_KIND_KERNEL, on_kernel},
};

void cp_records_handle(cp_cupti_state *st, const CUpti_Activity *rec) {
  for (size_t i = 0; i < sizeof handlers / sizeof *handlers; i++)
    if (handlers[i].kind == rec->kind) {
      handlers[i].fn(st, rec);
      return;
    }
}

size_t cp_records_process(cp_cupti_state *st, uint8_t *buf, size_t valid,
                          cp_records_next_fn next) {
  CUpti_Activity *rec = NULL;
  size_t n = 0;
  while (valid && next(buf, valid, &rec) == 1) {
    cp_records_handle(st, rec);
    n++;
  }
  return n;
}
