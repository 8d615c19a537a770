/* core/record.c -- the public recording API: scopes, metrics, states, ops
 * and tensor metrics, written into every active session's store.
 * Hot path: scope enter/exit read atomics only (core/session_table.h). */
#include <limits.h>
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
#include "core/session.h"
#include "core/session_table.h"
#include "core/strtab.h"
#include "core/tmetric.h"
#include "core/tmetric_replay.h"
#include "core/trace.h"

/* ---- scopes, metrics, states ---------------------------------------------- */

int cp_ss_intern(const char *name, const char *what, uint32_t *id) {
  if (!name || !*name)
    return cp_error_set(CPROTON_EINVAL, "%s name must be a non-empty string",
                        what);
  return cp_strtab_intern(name, strlen(name), id);
}

/* Scope, state and op names: freed with the tree when sessions are gone. */
static int intern_scoped(const char *name, const char *what, uint32_t *id) {
  if (!name || !*name)
    return cp_error_set(CPROTON_EINVAL, "%s name must be a non-empty string",
                        what);
  return cp_strtab_intern_scoped(name, strlen(name), id);
}

/* Every active session sees `f`'s node for its context kind. Hot path. */
static void touch_frame(uint32_t mask, const cp_frame *f) {
  for (; mask; mask &= mask - 1) {
    int i = __builtin_ctz(mask);
    cp_node *n = cp_context_frame_node(f, cp_ss_hot_kind(i));
    cp_data *d = cp_ss_hot_data(i);
    if (n && d)
      cp_data_touch(d, n);
  }
}

/* With no session active nothing records a scope, state or op: their names
 * are not interned, so any number of distinct names costs no memory.
 * Returns 1 then, 0 when a session records, or an error. Outside a guard
 * (`guarded` 0) nothing may record: the caller saw no active session. */
static int nothing_records(const char *name, const char *what, int guarded) {
  if (!name || !*name)
    return cp_error_set(CPROTON_EINVAL, "%s name must be a non-empty string", what);
  if (guarded && cp_session_active_mask())
    return 0; /* cp_ss_intern() checks the length */
  if (strnlen(name, CP_STRTAB_MAX_LEN) >= CP_STRTAB_MAX_LEN)
    return cp_error_set(CPROTON_EINVAL, "%s name longer than %u bytes", what,
                        CP_STRTAB_MAX_LEN - 1);
  return 1;
}

static int scope_enter(const char *name, uint64_t *id_out, int guarded) {
  uint32_t name_id;
  cp_frame *f;
  int rc = nothing_records(name, "scope", guarded);
  if (rc < 0)
    return rc;
  if (rc == 1) {
    rc = cp_context_push_unresolved(name, &f);
    if (!rc && id_out)
      *id_out = f->id;
    return rc;
  }
  rc = intern_scoped(name, "scope", &name_id);
  if (rc)
    return rc;
  rc = cp_context_push(name_id, atomic_load_explicit(&cp_ss_active_kinds,
                                                     memory_order_relaxed),
                       &f);
  if (rc)
    return rc;
  uint32_t mask = cp_session_active_mask();
  if (mask) {
    touch_frame(mask, f);
    if (atomic_load_explicit(&cp_ss_trace_mask, memory_order_relaxed))
      f->start_ns = cp_clock_now_ns();
  }
  if (id_out)
    *id_out = f->id;
  return CPROTON_OK;
}

static void trace_scope(const cp_frame *f) {
  uint32_t mask = atomic_load(&cp_ss_trace_mask) & cp_session_active_mask();
  cp_event e = {.kind = CP_EVENT_SCOPE, .start_ns = f->start_ns,
                .end_ns = cp_clock_now_ns(), .name = f->name,
                .u.scope = {.thread = cp_context_thread_id()}};
  for (; mask; mask &= mask - 1) {
    int i = __builtin_ctz(mask);
    cp_node *n = f->node[cp_ss_hot_kind(i)];
    e.node = n ? n->id : 0;
    cp_trace_append(cp_ss_hot_trace(i), &e);
  }
}

static int add_metric(uint64_t scope_id, const char *name, cp_value v);

/* Wraps the body of a recording call in the calling thread's guard. */
#define GUARDED(call)                                                          \
  do {                                                                         \
    int guard_rc_ = cp_context_guard_begin();                                  \
    if (guard_rc_)                                                             \
      return guard_rc_;                                                        \
    guard_rc_ = (call);                                                        \
    cp_context_guard_end();                                                    \
    return guard_rc_;                                                          \
  } while (0)

/* With no session active a scope touches nothing shared: no guard. */
int cproton_scope_enter(const char *name, uint64_t *id_out) {
  if (!cp_session_active_mask())
    return scope_enter(name, id_out, 0);
  GUARDED(scope_enter(name, id_out, 1));
}

static int cpu_timed_scope_enter(const char *name, uint64_t *id_out) {
  uint64_t id;
  int rc = scope_enter(name, &id, 1);
  cp_frame *f = rc ? NULL : (cp_frame *)cp_context_find(0);
  if (f && f->name) { /* resolved: a session will receive the time */
    f->timed = 1;
    if (!f->start_ns)
      f->start_ns = cp_clock_now_ns();
  }
  if (!rc && id_out)
    *id_out = id;
  return rc;
}

int cproton_cpu_timed_scope_enter(const char *name, uint64_t *id_out) {
  GUARDED(cpu_timed_scope_enter(name, id_out));
}

/* A pop reads only the thread's own frame, whose name and node it holds
 * (`held` keeps compaction off): no guard. A timed or traced frame stays
 * held while its time and event are recorded, which keeps every node and
 * store alive as a guard would. */
int cproton_scope_exit(const char *name) {
  const cp_frame *f;
  int rc = cp_context_pop(name, &f);
  if (rc || !f->start_ns)
    return rc;
  uint64_t now = cp_clock_now_ns();
  if (f->timed)
    rc = add_metric(f->id, "cpu_time (ns)(exc)",
                    (cp_value){CP_VALUE_INT, {.i = (int64_t)(now - f->start_ns)}});
  trace_scope(f);
  cp_context_release();
  return rc;
}

size_t cproton_scope_depth(void) { return cp_context_depth(); }

/* Metrics of the current op land on the op node of each active session. */
static int add_op_metric(uint32_t name_id, cp_value v) {
  int rc = CPROTON_OK;
  for (uint32_t mask = cp_session_active_mask(); mask && !rc;
       mask &= mask - 1) {
    int i = __builtin_ctz(mask);
    int is_op;
    cp_node *n = cp_context_launch_node(cp_ss_hot_kind(i), &is_op);
    if (!is_op)
      return cp_error_set(CPROTON_ESTATE, "no op is open on this thread");
    rc = cp_data_add_metric(cp_ss_hot_data(i), n, name_id, v);
  }
  return rc;
}

static int add_metric(uint64_t scope_id, const char *name, cp_value v) {
  uint32_t name_id;
  int rc = cp_ss_intern(name, "metric", &name_id);
  if (rc)
    return rc;
  if (cp_metric_is_reserved(name))
    return cp_error_set(CPROTON_EINVAL, "metric name '%s' is reserved", name);
  if (scope_id == CPROTON_CURRENT_OP)
    return add_op_metric(name_id, v);
  const cp_frame *f = cp_context_find(scope_id);
  if (!f && scope_id != 0)
    return cp_error_set(CPROTON_ENOTFOUND,
                        "no open or recent scope with id %llu on this thread",
                        (unsigned long long)scope_id);
  for (uint32_t mask = cp_session_active_mask(); mask && !rc;
       mask &= mask - 1) {
    int i = __builtin_ctz(mask);
    cp_node *n = f ? cp_context_frame_node(f, cp_ss_hot_kind(i)) : cp_cct_root();
    if (!n)
      n = cp_context_top(cp_ss_hot_kind(i));
    rc = cp_data_add_metric(cp_ss_hot_data(i), n, name_id, v);
  }
  return rc;
}

/* ---- tensor metrics: slots resolved now, values folded at drain time ---- */

/* The node a metric for `scope_id` lands on for `kind`, as add_metric and
 * add_op_metric choose it. Errors: ESTATE (no op), ENOTFOUND (no scope). */
static int metric_node(uint64_t scope_id, cp_context_kind kind,
                       const cp_node **out) {
  if (scope_id == CPROTON_CURRENT_OP) {
    int is_op;
    *out = cp_context_launch_node(kind, &is_op);
    return is_op ? CPROTON_OK
                 : cp_error_set(CPROTON_ESTATE, "no op is open on this thread");
  }
  const cp_frame *f = cp_context_find(scope_id);
  if (!f && scope_id != 0)
    return cp_error_set(CPROTON_ENOTFOUND,
                        "no open or recent scope with id %llu on this thread",
                        (unsigned long long)scope_id);
  cp_node *n = f ? cp_context_frame_node(f, kind) : cp_cct_root();
  *out = n ? n : cp_context_top(kind);
  return CPROTON_OK;
}

static int tensor_metric_slot(uint64_t scope_id, const char *name,
                              int is_double, uint32_t n_values, int captured,
                              uint32_t *slot_out) {
  uint32_t name_id;
  int rc = slot_out ? cp_ss_intern(name, "metric", &name_id)
                    : cp_error_set(CPROTON_EINVAL, "slot_out is NULL");
  if (rc)
    return rc;
  if (cp_metric_is_reserved(name))
    return cp_error_set(CPROTON_EINVAL, "metric name '%s' is reserved", name);
  cp_tmetric_slot s = {.name = name_id, .n = n_values ? n_values : 1};
  if (n_values)
    s.kind = is_double ? CP_VALUE_DOUBLE_VEC : CP_VALUE_INT_VEC;
  else
    s.kind = is_double ? CP_VALUE_DOUBLE : CP_VALUE_INT;
  /* Proton 3.6 had no tensor metrics: its mode keeps the capture node */
  s.captured = captured && cp_compat_is_39();
  uint32_t mask = cp_session_active_mask();
  *slot_out = CPROTON_TENSOR_METRIC_NONE; /* no session: as for a number */
  if (!mask)
    return CPROTON_OK;
  for (; mask; mask &= mask - 1) {
    cp_context_kind k = cp_ss_hot_kind(__builtin_ctz(mask));
    if (!s.node[k] && (rc = metric_node(scope_id, k, &s.node[k])))
      return rc;
  }
  return cp_tmetric_reserve(&s, slot_out);
}

/* Guarded: the slot takes node pointers, which no compaction may free
 * before the slot is in the table (whose paths compaction re-creates). */
int cproton_tensor_metric_slot(uint64_t scope_id, const char *name,
                               int is_double, uint32_t *slot_out) {
  GUARDED(tensor_metric_slot(scope_id, name, is_double, 0, 0, slot_out));
}

int cproton_tensor_metric_slot_vector(uint64_t scope_id, const char *name,
                                      int is_double, uint32_t n_values,
                                      uint32_t *slot_out) {
  GUARDED(tensor_metric_slot(scope_id, name, is_double, n_values, 0,
                             slot_out));
}

int cproton_tensor_metric_slot_captured(uint64_t scope_id, const char *name,
                                        int is_double, uint32_t n_values,
                                        uint32_t *slot_out) {
  GUARDED(tensor_metric_slot(scope_id, name, is_double, n_values, 1,
                             slot_out));
}

void cproton_tensor_metric_tag(uint32_t slot) { cp_tmetric_tag_set(slot); }

/* Where a record of slot `s` lands, per context kind: a captured slot's
 * record at its replay's place (core/tmetric_replay.h) when one is queued,
 * else (and for every other slot) on the slot's node. */
static void record_nodes(uint32_t id, const cp_tmetric_slot *s,
                         const cp_node *out[CP_CONTEXT_KINDS]) {
  cp_node *place[CP_CONTEXT_KINDS] = {0};
  if (s->captured && cp_session_active_mask())
    cp_tmetric_replay_pop(id, place);
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    out[k] = s->node[k] && place[k] ? place[k] : s->node[k];
}

/* Folds one record (its value words) into every active session whose
 * context kind the slot resolved; returns the first error. */
static int fold_record(uint32_t id, const cp_tmetric_slot *s,
                       const uint64_t *values) {
  cp_value v;
  const cp_node *node[CP_CONTEXT_KINDS];
  int rc = cp_tmetric_value(s, values, &v);
  if (rc)
    return rc;
  record_nodes(id, s, node);
  for (uint32_t mask = cp_session_active_mask(); mask; mask &= mask - 1) {
    int i = __builtin_ctz(mask);
    const cp_node *n = node[cp_ss_hot_kind(i)];
    int r = n ? cp_data_add_metric(cp_ss_hot_data(i), n, s->name, v) : CPROTON_OK;
    rc = rc ? rc : r;
  }
  cp_value_release(&v);
  return rc;
}

/* Graph replays of captured metrics that could not be placed, said once
 * per drain (outside any lock: a log handler may call back). */
static void warn_unplaced(void) {
  uint64_t full, unplaced;
  cp_tmetric_replay_take_counts(&full, &unplaced);
  if (unplaced)
    cp_warn("tensor metrics: %llu records of metrics given during a CUDA "
            "graph capture found no replay of theirs (no CUPTI record of "
            "their copy kernel's replay was seen); they were added at their "
            "capture path, not under <launch context>/<captured_at>",
            (unsigned long long)unplaced);
  if (full)
    cp_warn("tensor metrics: %llu graph replays of captured metrics were not "
            "queued (more than %u waiting for a drain); their records may "
            "land at another replay's place: drain more often",
            (unsigned long long)full, CP_TMETRIC_REPLAY_MAX);
}

/* Records are {slot, s->n value words}, so a record naming no slot leaves
 * the length of everything after it unknown: the fold stops there. */
static int tensor_metric_fold(const uint64_t *words, size_t n_words,
                              size_t *n_folded) {
  size_t done = 0, w = 0;
  int rc = CPROTON_OK;
  if (!words && n_words)
    return cp_error_set(CPROTON_EINVAL, "tensor metric records are NULL");
  while (w < n_words && words[w] != CPROTON_TENSOR_METRIC_PAD) {
    const cp_tmetric_slot *s =
        words[w] > UINT32_MAX ? NULL : cp_tmetric_get((uint32_t)words[w]);
    if (!s || s->n > n_words - w - 1)
      break;
    int r = fold_record((uint32_t)words[w], s, words + w + 1);
    rc = rc ? rc : r;
    done += r == CPROTON_OK;
    w += 1 + (size_t)s->n;
  }
  if (n_folded)
    *n_folded = done;
  if (w < n_words && words[w] != CPROTON_TENSOR_METRIC_PAD)
    return cp_error_set(CPROTON_EPARSE, "tensor metric buffer: the record "
                        "at word %zu %s (slot %llu); its %zu words and those "
                        "after it were not read", w,
                        words[w] > UINT32_MAX || !cp_tmetric_get((uint32_t)words[w])
                            ? "names no reserved slot" : "is truncated",
                        (unsigned long long)words[w], n_words - w);
  return rc;
}

/* The fold itself, guarded: folding reads slots' nodes, which compaction
 * re-points. The session layer flushes the backends first
 * (cproton_tensor_metric_fold in session/start.c). */
int cp_record_tensor_metric_fold(const uint64_t *words, size_t n_words,
                                 size_t *n_folded) {
  int guard_rc = cp_context_guard_begin();
  if (guard_rc)
    return guard_rc;
  int rc = tensor_metric_fold(words, n_words, n_folded);
  cp_context_guard_end();
  warn_unplaced();
  return rc;
}

size_t cproton_tensor_metric_forget_places(void) {
  size_t n = cp_tmetric_replay_clear();
  if (n)
    cp_warn("tensor metrics: %zu graph replays of captured metrics lost their "
            "records (dropped by a full device buffer); their places are "
            "forgotten", n);
  return n;
}

int cproton_metric_add_int(uint64_t scope_id, const char *name, int64_t v) {
  GUARDED(add_metric(scope_id, name, (cp_value){CP_VALUE_INT, {.i = v}}));
}

int cproton_metric_add_double(uint64_t scope_id, const char *name, double v) {
  GUARDED(add_metric(scope_id, name, (cp_value){CP_VALUE_DOUBLE, {.d = v}}));
}

/* A string value lives in the session's store only: interned scoped. */
static int add_metric_string(uint64_t scope_id, const char *name,
                             const char *value) {
  if (!value)
    return cp_error_set(CPROTON_EINVAL, "metric '%s': value is NULL",
                        name ? name : "(null)");
  if (!cp_session_active_mask()) /* nothing records it: check the name */
    return add_metric(scope_id, name, (cp_value){CP_VALUE_INT, {.i = 0}});
  uint32_t id;
  int rc = cp_strtab_intern_scoped(value, strlen(value), &id);
  return rc ? rc : add_metric(scope_id, name, (cp_value){CP_VALUE_STRING, {.s = id}});
}

/* The elements are borrowed: core/data.c copies them into a new entry. */
static int add_vector(uint64_t scope_id, const char *name, cp_value v,
                      const void *values, size_t n) {
  if (!values && n)
    return cp_error_set(CPROTON_EINVAL, "vector metric '%s': values are NULL",
                        name ? name : "(null)");
  if (n > CPROTON_METRIC_MAX_VECTOR)
    return cp_error_set(CPROTON_EINVAL, "vector metric '%s' has %zu values, "
                        "more than %u", name ? name : "(null)", n,
                        CPROTON_METRIC_MAX_VECTOR);
  v.u.v.n = (uint32_t)n;
  return add_metric(scope_id, name, v);
}

int cproton_metric_add_int_vector(uint64_t scope_id, const char *name,
                                  const int64_t *values, size_t n) {
  cp_value v = {CP_VALUE_INT_VEC, {.v = {.p.i = (int64_t *)values}}};
  GUARDED(add_vector(scope_id, name, v, values, n));
}

int cproton_metric_add_double_vector(uint64_t scope_id, const char *name,
                                     const double *values, size_t n) {
  cp_value v = {CP_VALUE_DOUBLE_VEC, {.v = {.p.d = (double *)values}}};
  GUARDED(add_vector(scope_id, name, v, values, n));
}

int cproton_metric_add_string(uint64_t scope_id, const char *name,
                              const char *value) {
  GUARDED(add_metric_string(scope_id, name, value));
}

/* Proton 3.9 (core/compat.h) splits a state named METADATA_PREFIX<kernel>
 * into two frames, METADATA_STATE and <kernel>: Triton's launch hook
 * computes each kernel's launch metadata under such a state. */
#define METADATA_STATE "__proton_launch_metadata"
#define METADATA_PREFIX METADATA_STATE ":"

static int state_enter(const char *name) {
  uint32_t id = 0, tail = 0; /* 0: unresolved (no session records it) */
  int rc = nothing_records(name, "state", 1);
  if (rc < 0)
    return rc;
  if (rc == 1)
    return cp_context_state_push(0, 0);
  size_t k = sizeof METADATA_PREFIX - 1;
  if (cp_compat_is_39() && strncmp(name, METADATA_PREFIX, k) == 0 && name[k]) {
    rc = intern_scoped(name + k, "state", &tail);
    name = METADATA_STATE;
  }
  rc = rc ? rc : intern_scoped(name, "state", &id);
  return rc ? rc : cp_context_state_push(id, tail);
}

int cproton_state_enter(const char *name) { GUARDED(state_enter(name)); }

int cproton_state_exit(void) { GUARDED(cp_context_state_pop()); }

static int op_enter(const char *name) {
  uint32_t id = 0; /* with no session the op is not recorded (cleared) */
  int rc = nothing_records(name, "op", 1);
  if (rc < 0)
    return rc;
  rc = rc == 1 ? CPROTON_OK : intern_scoped(name, "op", &id);
  return rc ? rc : cp_context_op_set(id);
}

int cproton_op_enter(const char *name) { GUARDED(op_enter(name)); }

int cproton_op_exit(void) { GUARDED(cp_context_op_set(0)); }

int cproton_frame_intern(const char *name, uint32_t *id_out) {
  if (!id_out)
    return cp_error_set(CPROTON_EINVAL, "id_out is required");
  return cp_ss_intern(name, "frame", id_out);
}

int cproton_context_register(const char *name, cproton_unwind_fn fn,
                             void *user) {
  cp_context_kind kind;
  int rc = cp_context_kind_parse(name, &kind);
  return rc ? rc : cp_context_source_set(kind, fn, user);
}
