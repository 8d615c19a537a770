/* core/session.c -- the session slot table (core/session_table.h),
 * compaction of the tree once no session is left, and the capture/deliver
 * pair for backends. The life cycle (start, finalize) is the session
 * layer's (src/session/); the recording API is core/record.c's.
 *
 * Invariant: a slot's data and trace objects are created once and reused by
 * later sessions in that slot (reset, not freed), so a thread that read the
 * active mask just before a finalize still touches valid memory; the epoch
 * (bumped on every start) keeps records captured before a slot was reused
 * out of the new session.
 * Hot path: scope enter/exit and cp_session_capture read atomics only.
 * Called by core/record.c, the session layer and backends. */
#include <limits.h>
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/compat.h"
#include "core/error.h"
#include "core/log.h"
#include "core/native.h"
#include "core/phase.h"
#include "core/kernel_times.h"
#include "core/kfacts.h"
#include "core/session.h"
#include "core/session_table.h"
#include "core/strtab.h"
#include "core/tmetric.h"
#include "core/tmetric_replay.h"
#include "core/trace.h"


/* table_lock serialises control calls (start, activate, finalize). slots_rw
 * guards slot fields against record delivery: delivery reads under it, and
 * control calls write under it only while they change a slot, never while
 * they flush a backend (a flush may deliver on the calling thread). */
pthread_mutex_t cp_ss_table_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t cp_ss_slots_rw = PTHREAD_RWLOCK_INITIALIZER;
session cp_ss_slots[CP_MAX_SESSIONS];
atomic_uint cp_ss_active_mask;      /* bit per active slot */
atomic_uint cp_ss_active_kinds;     /* bit per context kind in use */
atomic_uint cp_ss_trace_mask;       /* active slots with data="trace" */
atomic_uint cp_ss_epoch = 1;
int cp_ss_next_id; /* under table_lock; ids are never reused, as in Proton */
atomic_uint cp_ss_compactions; /* times the tree and scoped names were freed */

/* What scope and metric calls read of a slot without a lock: a thread that
 * read the active mask just before a finalize and a new start (or a phase
 * change) in the same slot may still read them, so they live here as
 * atomics, apart from the slot that `*s = fresh` rewrites under slots_rw. */
cp_ss_hot_slot cp_ss_hot[CP_MAX_SESSIONS];

/* Publishes slot `i`'s kind, data and trace; caller holds slots_rw. */
void cp_ss_publish_hot(int i) {
  atomic_store_explicit(&cp_ss_hot[i].kind, (unsigned)cp_ss_slots[i].kind, memory_order_relaxed);
  atomic_store_explicit(&cp_ss_hot[i].data, cp_ss_slots[i].data, memory_order_release);
  atomic_store_explicit(&cp_ss_hot[i].trace, cp_ss_slots[i].trace, memory_order_release);
}

cp_context_kind cp_ss_hot_kind(int i) {
  return (cp_context_kind)atomic_load_explicit(&cp_ss_hot[i].kind, memory_order_relaxed);
}
cp_data *cp_ss_hot_data(int i) {
  return atomic_load_explicit(&cp_ss_hot[i].data, memory_order_acquire);
}
cp_trace *cp_ss_hot_trace(int i) {
  return atomic_load_explicit(&cp_ss_hot[i].trace, memory_order_acquire);
}

/* Sequentially consistent: inside a guard (cp_context_guard_begin) this
 * load and the guard's store pair with compact_if_idle's (Dekker). A plain
 * load on x86 and a load-acquire on Arm. */
uint32_t cp_session_active_mask(void) { return atomic_load(&cp_ss_active_mask); }

/* Recomputes the derived masks; caller holds table_lock. */
void cp_ss_set_active(int slot, int on) {
  uint32_t mask = atomic_load(&cp_ss_active_mask);
  mask = on ? mask | (1u << slot) : mask & ~(1u << slot);
  unsigned kinds = 1, trace = 0;
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    if (mask >> i & 1) {
      kinds |= 1u << cp_ss_slots[i].kind;
      trace |= (unsigned)cp_ss_slots[i].is_trace << i;
    }
  atomic_store(&cp_ss_active_kinds, kinds);
  atomic_store(&cp_ss_trace_mask, trace);
  atomic_store_explicit(&cp_ss_active_mask, mask, memory_order_release);
  cp_context_touch(); /* every launch site's sessions changed */
}

/* ---- activate / deactivate / finalize -------------------------------------- */

/* The slot of live session `id` into *slot; caller holds table_lock. The
 * message is Proton's. */
int cp_ss_find_slot(int id, int *slot) {
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    if (cp_ss_slots[i].in_use && cp_ss_slots[i].id == id) {
      *slot = i;
      return CPROTON_OK;
    }
  return cp_error_set(CPROTON_ENOTFOUND, "Session has not been initialized: %d",
                      id);
}

int cp_ss_each_session(int id, int (*fn)(int)) {
  pthread_mutex_lock(&cp_ss_table_lock);
  int rc = CPROTON_OK;
  if (id == CPROTON_ALL_SESSIONS) {
    for (int i = 0; i < CP_MAX_SESSIONS; i++)
      if (cp_ss_slots[i].in_use) {
        int r = fn(i);
        rc = rc ? rc : r;
      }
  } else {
    int slot = 0;
    if (!(rc = cp_ss_find_slot(id, &slot)))
      rc = fn(slot);
  }
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

/* Frees the tree, the scoped names and the spare stores' tables. Runs
 * under cp_context_compact: no thread records, folds or holds a node.
 * Tensor-metric slots are the one thing that names nodes across it (their
 * ids sit in device buffers and captured graphs, core/tmetric.c): their
 * paths are saved as strings first and re-created in the new tree, so a
 * record drained later lands on the same scope path. Returns 0, freeing
 * nothing, when the paths cannot be saved (out of memory). */
static int paths_unsaved;   /* under table_lock: reported by compact_if_idle */
static size_t paths_on_root; /* (a log handler must not run under reg_lock) */

static int reset_tables(void) {
  cp_tmetric_saved *paths;
  if (cp_tmetric_save_paths(&paths)) {
    paths_unsaved = 1;
    return 0;
  }
  /* no session is left to receive a graph replay's place; they name nodes */
  cp_tmetric_replay_clear();
  cp_native_reset(); /* its known stacks name nodes */
  cp_cct_reset();
  cp_strtab_scoped_reset();
  paths_on_root = cp_tmetric_restore_paths(paths);
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    cp_phases_trim(&cp_ss_slots[i].phases);
#ifdef __GLIBC__
  malloc_trim(0); /* else glibc keeps nearly all of it (names_memory_bench) */
#endif
  return 1;
}

/* With no session in use (every backend stopped, so no launch site or
 * graph capture is left to deliver), nothing names a node or a scoped
 * string but threads' open frames, states and ops, and tensor-metric slots
 * (re-created by reset_tables): if no thread holds one and none is inside
 * a recording call, free them all. Caller: table_lock.
 * Who else keeps a node or scoped id across a finalize, and why it is safe:
 * - launch sites (CUPTI's correlation and graph tables and lazy ranges, PC sampling's site
 *   cache, instrumentation launches queued for the decoder threads): every
 *   delivery checks site_reaches under slots_rw before it reads a node, and
 *   a site captured before the compaction has an epoch older than any
 *   session started after it; the instrumentation backend's flush and stop
 *   wait for its decoder threads before this runs anyway;
 * - phases (periodic flushing): a finalized slot's stores are cleared, and
 *   cp_phases_trim frees their per-node tables here;
 * - perfetto's interned names: per output file, written before this;
 * - Python's frame-name cache and instrumented kernels' names: kept ids,
 *   never freed. */
void cp_ss_compact_if_idle(void) {
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    if (cp_ss_slots[i].in_use)
      return;
  pthread_rwlock_wrlock(&cp_ss_slots_rw);
  paths_unsaved = 0, paths_on_root = 0;
  if (cp_context_compact(reset_tables))
    atomic_fetch_add(&cp_ss_compactions, 1);
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  if (paths_unsaved)
    cp_warn("out of memory saving tensor-metric slots: scope names are kept "
            "until a later finalize");
  if (paths_on_root)
    cp_warn("tensor metrics: out of memory re-creating %zu slots' scopes after "
            "the context tree was freed; their values go to ROOT",
            paths_on_root);
}

unsigned cp_session_compactions(void) { return atomic_load(&cp_ss_compactions); }

/* ---- backends' side ---------------------------------------------------------- */

int cp_session_sites_shared(void) {
  return atomic_load(&cp_ss_active_kinds) == 1u << CP_CONTEXT_SHADOW &&
         atomic_load(&cp_ss_trace_mask) == 0;
}

static void capture(cp_launch_site *site) {
  uint32_t mask = cp_session_active_mask();
  site->sessions = mask;
  site->epoch = atomic_load_explicit(&cp_ss_epoch, memory_order_acquire);
  if (!mask)
    return;
  unsigned kinds = atomic_load_explicit(&cp_ss_active_kinds, memory_order_relaxed);
  for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
    int is_op = 0;
    site->node[k] = (kinds >> k) & 1
                        ? cp_context_launch_node((cp_context_kind)k, &is_op)
                        : NULL;
    site->is_op[k] = (uint8_t)is_op;
  }
  site->thread = cp_context_thread_id();
  site->launch_ns =
      atomic_load_explicit(&cp_ss_trace_mask, memory_order_relaxed) ? cp_clock_now_ns()
                                                              : 0;
}

/* With no session active a launch touches nothing shared: no guard. */
void cp_session_capture(cp_launch_site *site) {
  if (!cp_session_active_mask() ||
      cp_context_guard_begin()) { /* no thread state: records nothing */
    memset(site, 0, sizeof *site);
    site->epoch = atomic_load_explicit(&cp_ss_epoch, memory_order_acquire);
    return;
  }
  capture(site);
  cp_context_guard_end();
}

cp_node *cp_session_kernel_node(const cp_launch_site *site,
                                cp_context_kind kind, const char *kernel_name) {
  cp_node *n = site->node[kind];
  if (!n)
    n = cp_cct_root();
  if (site->is_op[kind])
    return n;
  kernel_name = cp_compat_kernel_frame(kernel_name);
  return cp_cct_child_str(n, kernel_name && *kernel_name ? kernel_name
                                                         : "<unknown kernel>");
}

/* Session i still holds what `site` captured for it. Caller: slots_rw. */
static int site_reaches(const cp_launch_site *site, int i) {
  return (site->sessions >> i & 1) && cp_ss_slots[i].in_use &&
         cp_ss_slots[i].start_epoch <= site->epoch;
}

/* The phase of session i a record launched at `site` belongs to, or NULL
 * (counted as late) when that phase was written or cleared already.
 * Caller: slots_rw. */
static cp_phase *site_phase(const cp_launch_site *site, int i) {
  cp_phases *ps = &cp_ss_slots[i].phases;
  cp_phase *p = cp_phases_at_epoch(ps, site->epoch);
  if (!p) {
    atomic_fetch_add(&ps->late, 1);
    return NULL;
  }
  uint32_t seen = atomic_load(&ps->max_delivered);
  while (p->number > seen &&
         !atomic_compare_exchange_weak(&ps->max_delivered, &seen, p->number))
    ;
  return p;
}

static void trace_kernel(cp_trace *t, const cp_launch_site *site,
                         const cp_kernel_record *r, const cp_node *n) {
  cp_event e = {.kind = CP_EVENT_KERNEL, .start_ns = r->start_ns,
                .end_ns = r->end_ns, .name = n->name, .node = n->id,
                .u.kernel = {.launch_ns = site->launch_ns,
                             .stream = r->stream_id, .device = r->device_id,
                             .launch_thread = site->thread,
                             .correlation = r->correlation_id,
                             .graph_id = r->graph_id}};
  cp_trace_append(t, &e);
}

int cp_session_deliver_kernel(const cp_launch_site *site,
                              const cp_kernel_record *r) {
  int rc = CPROTON_OK;
  uint64_t dur = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
  cp_ktimes_put(r->name, site->launch_ns, r->start_ns, r->end_ns); /* regions align to it */
  pthread_rwlock_rdlock(&cp_ss_slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS; i++) {
    if (!site_reaches(site, i))
      continue;
    session *s = &cp_ss_slots[i];
    cp_phase *p = site_phase(site, i);
    cp_node *n = p ? cp_session_kernel_node(site, s->kind, r->name) : NULL;
    if (!p)
      continue;
    if (!n) {
      rc = CPROTON_ENOMEM;
      continue;
    }
    uint32_t count = r->count > 1 ? r->count : 1;
    atomic_fetch_add_explicit(&s->kernels, count, memory_order_relaxed);
    rc = cp_data_add_kernel(p->data, n, dur, count, r->device_id,
                            r->device_type);
    /* an op frame (named by launch_metadata) shows its kernel's facts */
    if (site->is_op[s->kind] &&
        cp_kfacts_alias(cp_strtab_str(n->name), r->name) != CPROTON_OK)
      rc = CPROTON_ENOMEM;
    if (s->is_trace)
      trace_kernel(p->trace, site, r, n);
  }
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  return rc;
}

static cp_node *path_node(const cp_launch_site *site, cp_context_kind kind,
                          const char *kernel, const uint32_t *names,
                          size_t n) {
  cp_node *node = cp_session_kernel_node(site, kind, kernel);
  for (size_t k = 0; k < n && node; k++)
    node = cp_cct_child(node, names[k]);
  return node;
}

int cp_session_deliver_path_metric(const cp_launch_site *site,
                                   const char *kernel, const uint32_t *names,
                                   size_t n_names, uint32_t metric,
                                   cp_value v) {
  int rc = CPROTON_OK;
  pthread_rwlock_rdlock(&cp_ss_slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS && !rc; i++) {
    if (!site_reaches(site, i))
      continue;
    cp_phase *p = site_phase(site, i);
    if (!p)
      continue;
    cp_node *n = path_node(site, cp_ss_slots[i].kind, kernel, names, n_names);
    rc = n ? cp_data_add_metric(p->data, n, metric, v) : CPROTON_ENOMEM;
  }
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  return rc;
}

int cp_session_deliver_metric(const cp_launch_site *site,
                              const char *kernel_name, const char *metric,
                              cp_value v) {
  uint32_t name_id;
  int rc = cp_ss_intern(metric, "metric", &name_id);
  return rc ? rc
            : cp_session_deliver_path_metric(site, kernel_name, NULL, 0,
                                             name_id, v);
}

int cp_session_deliver_event(const cp_launch_site *site, const char *kernel,
                             const uint32_t *names, size_t n_names,
                             const cp_event *proto) {
  int rc = CPROTON_OK;
  pthread_rwlock_rdlock(&cp_ss_slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS && !rc; i++) {
    if (!site_reaches(site, i) || !cp_ss_slots[i].is_trace)
      continue;
    cp_phase *p = site_phase(site, i);
    if (!p)
      continue;
    cp_node *n = path_node(site, cp_ss_slots[i].kind, kernel, names, n_names);
    cp_event e = *proto;
    e.node = n ? n->id : 0;
    rc = cp_trace_append(p->trace, &e);
  }
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  return rc;
}

/* The counter event of a sample, its name interned; refuses what a trace
 * could not show (no name, a backwards interval, a value JSON has no
 * number for). */
static int counter_event(uint32_t device, uint64_t t0_ns, uint64_t t1_ns,
                         const char *counter, double value, cp_event *e) {
  if (t1_ns < t0_ns)
    return cp_error_set(CPROTON_EINVAL,
                        "counter '%s': sample ends (%llu ns) before it "
                        "begins (%llu ns)",
                        counter ? counter : "", (unsigned long long)t1_ns,
                        (unsigned long long)t0_ns);
  if (!isfinite(value))
    return cp_error_set(CPROTON_EINVAL, "counter '%s': value is not finite",
                        counter ? counter : "");
  *e = (cp_event){.kind = CP_EVENT_COUNTER, .start_ns = t0_ns,
                  .end_ns = t1_ns,
                  .u.counter = {.value = value, .device = device}};
  return cp_ss_intern(counter, "counter", &e->name);
}

int cp_session_deliver_counter(uint32_t device, uint64_t t0_ns,
                               uint64_t t1_ns, const char *counter,
                               double value) {
  cp_event e;
  int rc = counter_event(device, t0_ns, t1_ns, counter, value, &e);
  if (rc)
    return rc;
  pthread_rwlock_rdlock(&cp_ss_slots_rw);
  uint32_t mask = atomic_load(&cp_ss_trace_mask) & cp_session_active_mask();
  for (; mask; mask &= mask - 1) {
    int i = __builtin_ctz(mask);
    int r = cp_ss_slots[i].in_use ? cp_trace_append(cp_ss_hot_trace(i), &e)
                                  : CPROTON_OK;
    rc = rc ? rc : r; /* a full trace counts its drop; the others go on */
  }
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  return rc;
}

int cp_session_site_traces(const cp_launch_site *site) {
  int any = 0;
  pthread_rwlock_rdlock(&cp_ss_slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    any |= site_reaches(site, i) && cp_ss_slots[i].is_trace;
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  return any;
}
