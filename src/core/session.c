/* core/session.c -- the session table and the public session, scope,
 * metric and state API.
 *
 * Invariant: a slot's data and trace objects are created once and reused by
 * later sessions in that slot (reset, not freed), so a thread that read the
 * active mask just before a finalize still touches valid memory; the epoch
 * (bumped on every start) keeps records captured before a slot was reused
 * out of the new session.
 * Hot path: scope enter/exit and cp_session_capture read atomics only.
 * Called by the public API users, the Python extension and backends. */
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/session.h"
#include "core/strtab.h"
#include "core/trace.h"
#include "io/chrome_trace.h"
#include "io/hatchet_write.h"
#include "io/sink.h"

typedef struct session {
  int in_use;
  int id;               /* the public id: never reused in a process */
  uint32_t start_epoch;
  cp_context_kind kind;
  int is_trace, gzip;
  const cp_backend_ops *backend;
  char *mode;
  char path[PATH_MAX]; /* without extension */
  cp_data *data;       /* persistent per slot */
  cp_trace *trace;     /* persistent per slot */
} session;

/* table_lock serialises control calls (start, activate, finalize). slots_rw
 * guards slot fields against record delivery: delivery reads under it, and
 * control calls write under it only while they change a slot, never while
 * they flush a backend (a flush may deliver on the calling thread). */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t slots_rw = PTHREAD_RWLOCK_INITIALIZER;
static session slots[CP_MAX_SESSIONS];
static atomic_uint active_mask;      /* bit per active slot */
static atomic_uint active_kinds;     /* bit per context kind in use */
static atomic_uint trace_mask;       /* active slots with data="trace" */
static atomic_uint epoch = 1;
static int next_id; /* under table_lock; ids are never reused, as in Proton */

uint32_t cp_session_active_mask(void) {
  return atomic_load_explicit(&active_mask, memory_order_acquire);
}

/* Recomputes the derived masks; caller holds table_lock. */
static void set_active(int slot, int on) {
  uint32_t mask = atomic_load(&active_mask);
  mask = on ? mask | (1u << slot) : mask & ~(1u << slot);
  unsigned kinds = 1, trace = 0;
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    if (mask >> i & 1) {
      kinds |= 1u << slots[i].kind;
      trace |= (unsigned)slots[i].is_trace << i;
    }
  atomic_store(&active_kinds, kinds);
  atomic_store(&trace_mask, trace);
  atomic_store_explicit(&active_mask, mask, memory_order_release);
}

/* ---- start ----------------------------------------------------------------- */

void cproton_session_options_init(cproton_session_options *o) {
  memset(o, 0, sizeof *o);
  o->rank = -1;
  o->local_rank = -1;
}

/* Expands {pid}, {rank} and {local_rank} in `name` into `out`. */
static int expand_name(const cproton_session_options *o, char *out,
                       size_t size) {
  const char *name = o->name && *o->name ? o->name : "proton";
  size_t n = 0;
  for (const char *p = name; *p && n + 1 < size;) {
    char num[32] = "";
    if (strncmp(p, "{pid}", 5) == 0)
      snprintf(num, sizeof num, "%d", (int)getpid()), p += 5;
    else if (strncmp(p, "{rank}", 6) == 0)
      snprintf(num, sizeof num, "%d", o->rank < 0 ? 0 : o->rank), p += 6;
    else if (strncmp(p, "{local_rank}", 12) == 0)
      snprintf(num, sizeof num, "%d", o->local_rank < 0 ? 0 : o->local_rank),
          p += 12;
    else
      num[0] = *p++, num[1] = '\0';
    size_t k = strlen(num);
    if (n + k + 1 >= size)
      return cp_error_set(CPROTON_EINVAL, "session name too long");
    memcpy(out + n, num, k + 1);
    n += k;
  }
  return CPROTON_OK;
}

static int parse_options(const cproton_session_options *o, session *s) {
  int rc = cp_context_kind_parse(o->context ? o->context : "shadow", &s->kind);
  if (rc)
    return rc;
  const char *data = o->data ? o->data : "tree";
  if (strcmp(data, "tree") != 0 && strcmp(data, "trace") != 0)
    return cp_error_set(CPROTON_EINVAL,
                        "unknown data '%s' (valid: tree, trace)", data);
  s->is_trace = strcmp(data, "trace") == 0;
  s->gzip = o->gzip;
  if (!cp_context_source_ready(s->kind))
    return cp_error_set(CPROTON_EINVAL,
                        "context '%s' has no registered source (import "
                        "cproton in Python to get one)", o->context);
  s->backend = o->backend ? cp_backend_find(o->backend) : cp_backend_default();
  if (!s->backend)
    return CPROTON_EINVAL;
  return expand_name(o, s->path, sizeof s->path);
}

/* How many live sessions use `b`; caller holds table_lock. */
static int backend_users(const cp_backend_ops *b) {
  int n = 0;
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    n += slots[i].in_use && slots[i].backend == b;
  return n;
}

/* A second session on a running backend must ask for the same mode: the
 * backend serves every session with the collection the first one set up. */
static int check_mode(const session *s, const char *mode) {
  const char *running = NULL;
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    if (slots[i].in_use && slots[i].backend == s->backend) {
      running = slots[i].mode;
      break;
    }
  const char *a = running ? running : "", *b = mode ? mode : "";
  int same = s->backend->mode_compatible ? s->backend->mode_compatible(a, b)
                                         : strcmp(a, b) == 0;
  if (same)
    return CPROTON_OK;
  return cp_error_set(CPROTON_EINVAL,
                      "Cannot add a session with the same profiler but a "
                      "different mode than existing sessions: backend '%s' "
                      "runs mode '%s', this session asks for '%s' (finalize "
                      "the other sessions first)",
                      s->backend->name, a, b);
}

static int start_backend(session *s, const char *mode) {
  if (s->backend->check_mode && s->backend->check_mode(mode))
    return CPROTON_EINVAL;
  if (backend_users(s->backend) > 0)
    return check_mode(s, mode);
  if (!s->backend->available()) {
    cp_warn("backend '%s' is not available here (%s); recording CPU scopes "
            "only", s->backend->name, cp_error_message());
    s->backend = cp_backend_find("none");
    return CPROTON_OK;
  }
  return s->backend->start(mode);
}

static int alloc_slot_storage(session *s) {
  if (!s->data && !(s->data = cp_data_new()))
    return cp_error_set(CPROTON_ENOMEM, "out of memory starting a session");
  if (!s->trace && !(s->trace = cp_trace_new()))
    return cp_error_set(CPROTON_ENOMEM, "out of memory starting a session");
  return CPROTON_OK;
}

int cproton_session_start(const cproton_session_options *o, int *session_out) {
  if (!o || !session_out)
    return cp_error_set(CPROTON_EINVAL, "options and session_out are required");
  pthread_mutex_lock(&table_lock);
  int slot = 0;
  while (slot < CP_MAX_SESSIONS && slots[slot].in_use)
    slot++;
  int rc = slot == CP_MAX_SESSIONS
               ? cp_error_set(CPROTON_ELIMIT, "more than %d sessions",
                              CP_MAX_SESSIONS)
               : CPROTON_OK;
  session *s = &slots[slot < CP_MAX_SESSIONS ? slot : 0];
  session fresh = {.data = s->data, .trace = s->trace};
  if (!rc)
    rc = parse_options(o, &fresh);
  if (!rc)
    rc = alloc_slot_storage(&fresh);
  if (!rc)
    rc = start_backend(&fresh, o->mode);
  if (!rc && o->mode && !(fresh.mode = strdup(o->mode)))
    rc = cp_error_set(CPROTON_ENOMEM, "out of memory starting a session");
  if (!rc) {
    fresh.in_use = 1;
    fresh.start_epoch = atomic_fetch_add(&epoch, 1) + 1;
    fresh.id = next_id++;
    pthread_rwlock_wrlock(&slots_rw);
    *s = fresh;
    pthread_rwlock_unlock(&slots_rw);
    set_active(slot, 1);
    cp_context_set_main();
    *session_out = fresh.id;
  } else if (slot < CP_MAX_SESSIONS) {
    s->data = fresh.data, s->trace = fresh.trace;
  }
  pthread_mutex_unlock(&table_lock);
  return rc;
}

/* ---- activate / deactivate / finalize -------------------------------------- */

/* The slot of live session `id` into *slot; caller holds table_lock. The
 * message is Proton's. */
static int find_slot(int id, int *slot) {
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    if (slots[i].in_use && slots[i].id == id) {
      *slot = i;
      return CPROTON_OK;
    }
  return cp_error_set(CPROTON_ENOTFOUND, "Session has not been initialized: %d",
                      id);
}

static int each_session(int id, int (*fn)(int)) {
  pthread_mutex_lock(&table_lock);
  int rc = CPROTON_OK;
  if (id == CPROTON_ALL_SESSIONS) {
    for (int i = 0; i < CP_MAX_SESSIONS; i++)
      if (slots[i].in_use) {
        int r = fn(i);
        rc = rc ? rc : r;
      }
  } else {
    int slot = 0;
    if (!(rc = find_slot(id, &slot)))
      rc = fn(slot);
  }
  pthread_mutex_unlock(&table_lock);
  return rc;
}

static int do_activate(int i) {
  set_active(i, 1);
  return CPROTON_OK;
}

static int do_deactivate(int i) {
  set_active(i, 0);
  return slots[i].backend->flush();
}

int cproton_session_activate(int id) { return each_session(id, do_activate); }
int cproton_session_deactivate(int id) {
  return each_session(id, do_deactivate);
}

static const char *format_of(const session *s, const char *format) {
  if (format && *format)
    return format;
  return s->is_trace ? "chrome_trace" : "hatchet";
}

static _Thread_local const char *finalize_format;

/* Kernel-timing sessions (every backend but instrumentation) write zeroed
 * kernel metrics on ROOT, as Proton does. */
static int kernel_root(const session *s) {
  return strcmp(s->backend->name, "instrumentation") != 0;
}

static int write_output(session *s, const char *format) {
  char path[PATH_MAX + 32];
  int timeline = strcmp(format, "chrome_timeline") == 0;
  int trace = timeline || strcmp(format, "chrome_trace") == 0;
  if (!trace && strcmp(format, "hatchet") != 0)
    return cp_error_set(CPROTON_EINVAL,
                        "unknown output format '%s' (valid: hatchet, "
                        "chrome_trace, chrome_timeline)", format);
  const char *ext = trace ? (s->gzip ? ".chrome_trace.gz" : ".chrome_trace")
                          : ".hatchet";
  size_t n = strlen(s->path), k = strlen(ext);
  snprintf(path, sizeof path, "%s%s", s->path,
           n >= k && strcmp(s->path + n - k, ext) == 0 ? "" : ext);
  cp_sink *sink;
  int rc = cp_sink_file(path, trace && s->gzip, &sink);
  if (rc)
    return rc;
  rc = timeline ? cp_chrome_trace_write_timeline(sink, s->trace, s->data)
       : trace  ? cp_chrome_trace_write(sink, s->trace, s->data)
                : cp_hatchet_write(sink, s->data, kernel_root(s));
  int close_rc = cp_sink_close(sink, rc != CPROTON_OK, NULL, NULL);
  return rc ? rc : close_rc;
}

static int do_finalize(int i) {
  session *s = &slots[i];
  set_active(i, 0);
  int rc = s->backend->flush();
  if (rc)
    cp_warn("flushing backend '%s' failed: %s", s->backend->name,
            cp_error_message());
  rc = write_output(s, format_of(s, finalize_format));
  pthread_rwlock_wrlock(&slots_rw);
  s->in_use = 0;
  const cp_backend_ops *unused =
      backend_users(s->backend) == 0 ? s->backend : NULL;
  cp_data_reset(s->data);
  cp_trace_clear(s->trace);
  free(s->mode);
  s->mode = NULL;
  pthread_rwlock_unlock(&slots_rw);
  /* Stopped outside slots_rw: a stop flushes, and records it delivers on
   * another thread take slots_rw for reading. */
  if (unused)
    unused->stop();
  return rc;
}

int cproton_session_finalize(int id, const char *format) {
  finalize_format = format;
  return each_session(id, do_finalize);
}

int cproton_session_output_path(int id, char *buf, size_t size) {
  pthread_mutex_lock(&table_lock);
  int slot = 0;
  int rc = find_slot(id, &slot);
  if (!rc && buf && size)
    snprintf(buf, size, "%s", slots[slot].path);
  pthread_mutex_unlock(&table_lock);
  return rc;
}

int cproton_session_data_json(int id, char **json_out, size_t *size_out) {
  if (!json_out)
    return cp_error_set(CPROTON_EINVAL, "json_out is required");
  pthread_mutex_lock(&table_lock);
  int slot = 0;
  int rc = find_slot(id, &slot);
  cp_sink *sink = NULL;
  if (!rc)
    rc = slots[slot].backend->flush();
  if (!rc)
    rc = cp_sink_memory(&sink);
  if (!rc) {
    rc = cp_hatchet_write(sink, slots[slot].data, kernel_root(&slots[slot]));
    int close_rc = cp_sink_close(sink, rc != CPROTON_OK, json_out, size_out);
    rc = rc ? rc : close_rc;
  }
  pthread_mutex_unlock(&table_lock);
  return rc;
}

void cproton_free(void *ptr) { free(ptr); }

int cproton_session_count(void) {
  pthread_mutex_lock(&table_lock);
  int n = 0;
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    n += slots[i].in_use;
  pthread_mutex_unlock(&table_lock);
  return n;
}

void cp_session_reset_all(void) {
  pthread_mutex_lock(&table_lock);
  const cp_backend_ops *to_stop[CP_MAX_SESSIONS];
  int n_stop = 0;
  pthread_rwlock_wrlock(&slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS; i++) {
    if (slots[i].in_use) {
      set_active(i, 0);
      slots[i].in_use = 0;
      if (backend_users(slots[i].backend) == 0)
        to_stop[n_stop++] = slots[i].backend;
    }
    if (slots[i].data)
      cp_data_reset(slots[i].data);
    if (slots[i].trace)
      cp_trace_clear(slots[i].trace);
    free(slots[i].mode);
    slots[i].mode = NULL;
  }
  pthread_rwlock_unlock(&slots_rw);
  for (int i = 0; i < n_stop; i++) /* outside slots_rw, as in finalize */
    to_stop[i]->stop();
  pthread_mutex_unlock(&table_lock);
}

void cp_session_threads_independent(void) { cp_context_clear_main(); }

/* ---- scopes, metrics, states ---------------------------------------------- */

static int intern(const char *name, const char *what, uint32_t *id) {
  if (!name || !*name)
    return cp_error_set(CPROTON_EINVAL, "%s name must be a non-empty string",
                        what);
  return cp_strtab_intern(name, strlen(name), id);
}

/* Every active session sees `f`'s node for its context kind. Hot path. */
static void touch_frame(uint32_t mask, const cp_frame *f) {
  for (; mask; mask &= mask - 1) {
    session *s = &slots[__builtin_ctz(mask)];
    cp_node *n = cp_context_frame_node(f, s->kind);
    if (n && s->data)
      cp_data_touch(s->data, n);
  }
}

int cproton_scope_enter(const char *name, uint64_t *id_out) {
  uint32_t name_id;
  int rc = intern(name, "scope", &name_id);
  if (rc)
    return rc;
  cp_frame *f;
  rc = cp_context_push(name_id, atomic_load_explicit(&active_kinds,
                                                     memory_order_relaxed),
                       &f);
  if (rc)
    return rc;
  uint32_t mask = cp_session_active_mask();
  if (mask) {
    touch_frame(mask, f);
    if (atomic_load_explicit(&trace_mask, memory_order_relaxed))
      f->start_ns = cp_clock_now_ns();
  }
  if (id_out)
    *id_out = f->id;
  return CPROTON_OK;
}

static void trace_scope(const cp_frame *f) {
  uint32_t mask = atomic_load(&trace_mask) & cp_session_active_mask();
  cp_event e = {.kind = CP_EVENT_SCOPE, .start_ns = f->start_ns,
                .end_ns = cp_clock_now_ns(), .name = f->name,
                .lane = cp_context_thread_id()};
  for (; mask; mask &= mask - 1) {
    session *s = &slots[__builtin_ctz(mask)];
    cp_node *n = f->node[s->kind];
    e.node = n ? n->id : 0;
    cp_trace_append(s->trace, &e);
  }
}

static int add_metric(uint64_t scope_id, const char *name, cp_value v);

int cproton_cpu_timed_scope_enter(const char *name, uint64_t *id_out) {
  uint64_t id;
  int rc = cproton_scope_enter(name, &id);
  cp_frame *f = rc ? NULL : (cp_frame *)cp_context_find(0);
  if (f) {
    f->timed = 1;
    if (!f->start_ns)
      f->start_ns = cp_clock_now_ns();
  }
  if (!rc && id_out)
    *id_out = id;
  return rc;
}

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
  return rc;
}

size_t cproton_scope_depth(void) { return cp_context_depth(); }

/* Metrics of the current op land on the op node of each active session. */
static int add_op_metric(uint32_t name_id, cp_value v) {
  int rc = CPROTON_OK;
  for (uint32_t mask = cp_session_active_mask(); mask && !rc;
       mask &= mask - 1) {
    session *s = &slots[__builtin_ctz(mask)];
    int is_op;
    cp_node *n = cp_context_launch_node(s->kind, &is_op);
    if (!is_op)
      return cp_error_set(CPROTON_ESTATE, "no op is open on this thread");
    rc = cp_data_add_metric(s->data, n, name_id, v);
  }
  return rc;
}

static int add_metric(uint64_t scope_id, const char *name, cp_value v) {
  uint32_t name_id;
  int rc = intern(name, "metric", &name_id);
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
    session *s = &slots[__builtin_ctz(mask)];
    cp_node *n = f ? cp_context_frame_node(f, s->kind) : cp_cct_root();
    if (!n)
      n = cp_context_top(s->kind);
    rc = cp_data_add_metric(s->data, n, name_id, v);
  }
  return rc;
}

int cproton_metric_add_int(uint64_t scope_id, const char *name, int64_t v) {
  return add_metric(scope_id, name, (cp_value){CP_VALUE_INT, {.i = v}});
}

int cproton_metric_add_double(uint64_t scope_id, const char *name, double v) {
  return add_metric(scope_id, name, (cp_value){CP_VALUE_DOUBLE, {.d = v}});
}

int cproton_metric_add_string(uint64_t scope_id, const char *name,
                              const char *value) {
  if (!value)
    return cp_error_set(CPROTON_EINVAL, "metric '%s': value is NULL",
                        name ? name : "(null)");
  uint32_t id;
  int rc = cp_strtab_intern(value, strlen(value), &id);
  return rc ? rc : add_metric(scope_id, name, (cp_value){CP_VALUE_STRING, {.s = id}});
}

int cproton_state_enter(const char *name) {
  uint32_t id;
  int rc = intern(name, "state", &id);
  return rc ? rc : cp_context_state_push(id);
}

int cproton_state_exit(void) { return cp_context_state_pop(); }

int cproton_op_enter(const char *name) {
  uint32_t id;
  int rc = intern(name, "op", &id);
  return rc ? rc : cp_context_op_set(id);
}

int cproton_op_exit(void) { return cp_context_op_set(0); }

int cproton_frame_intern(const char *name, uint32_t *id_out) {
  if (!id_out)
    return cp_error_set(CPROTON_EINVAL, "id_out is required");
  return intern(name, "frame", id_out);
}

int cproton_context_register(const char *name, cproton_unwind_fn fn,
                             void *user) {
  cp_context_kind kind;
  int rc = cp_context_kind_parse(name, &kind);
  return rc ? rc : cp_context_source_set(kind, fn, user);
}

/* ---- backends' side ---------------------------------------------------------- */

void cp_session_capture(cp_launch_site *site) {
  uint32_t mask = cp_session_active_mask();
  site->sessions = mask;
  site->epoch = atomic_load_explicit(&epoch, memory_order_acquire);
  if (!mask)
    return;
  unsigned kinds = atomic_load_explicit(&active_kinds, memory_order_relaxed);
  for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
    int is_op = 0;
    site->node[k] = (kinds >> k) & 1
                        ? cp_context_launch_node((cp_context_kind)k, &is_op)
                        : NULL;
    site->is_op[k] = (uint8_t)is_op;
  }
  site->thread = cp_context_thread_id();
  site->launch_ns =
      atomic_load_explicit(&trace_mask, memory_order_relaxed) ? cp_clock_now_ns()
                                                              : 0;
}

cp_node *cp_session_kernel_node(const cp_launch_site *site,
                                cp_context_kind kind, const char *kernel_name) {
  cp_node *n = site->node[kind];
  if (!n)
    n = cp_cct_root();
  if (site->is_op[kind])
    return n;
  return cp_cct_child_str(n, kernel_name && *kernel_name ? kernel_name
                                                         : "<unknown kernel>");
}

/* Session i still holds what `site` captured for it. Caller: slots_rw. */
static int site_reaches(const cp_launch_site *site, int i) {
  return (site->sessions >> i & 1) && slots[i].in_use &&
         slots[i].start_epoch <= site->epoch;
}

static void trace_kernel(session *s, const cp_launch_site *site,
                         const cp_kernel_record *r, const cp_node *n) {
  cp_event e = {.kind = CP_EVENT_KERNEL, .start_ns = r->start_ns,
                .end_ns = r->end_ns, .launch_ns = site->launch_ns,
                .name = n->name, .node = n->id, .lane = r->stream_id,
                .device = r->device_id, .launch_lane = site->thread,
                .correlation = r->correlation_id};
  cp_trace_append(s->trace, &e);
}

int cp_session_deliver_kernel(const cp_launch_site *site,
                              const cp_kernel_record *r) {
  int rc = CPROTON_OK;
  uint64_t dur = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
  pthread_rwlock_rdlock(&slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS; i++) {
    if (!site_reaches(site, i))
      continue;
    session *s = &slots[i];
    cp_node *n = cp_session_kernel_node(site, s->kind, r->name);
    if (!n) {
      rc = CPROTON_ENOMEM;
      continue;
    }
    rc = cp_data_add_kernel(s->data, n, dur, r->device_id, r->device_type);
    if (s->is_trace)
      trace_kernel(s, site, r, n);
  }
  pthread_rwlock_unlock(&slots_rw);
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
  pthread_rwlock_rdlock(&slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS && !rc; i++) {
    if (!site_reaches(site, i))
      continue;
    cp_node *n = path_node(site, slots[i].kind, kernel, names, n_names);
    rc = n ? cp_data_add_metric(slots[i].data, n, metric, v) : CPROTON_ENOMEM;
  }
  pthread_rwlock_unlock(&slots_rw);
  return rc;
}

int cp_session_deliver_metric(const cp_launch_site *site,
                              const char *kernel_name, const char *metric,
                              cp_value v) {
  uint32_t name_id;
  int rc = intern(metric, "metric", &name_id);
  return rc ? rc
            : cp_session_deliver_path_metric(site, kernel_name, NULL, 0,
                                             name_id, v);
}

int cp_session_deliver_event(const cp_launch_site *site, const char *kernel,
                             const uint32_t *names, size_t n_names,
                             const cp_event *proto) {
  int rc = CPROTON_OK;
  pthread_rwlock_rdlock(&slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS && !rc; i++) {
    if (!site_reaches(site, i) || !slots[i].is_trace)
      continue;
    cp_node *n = path_node(site, slots[i].kind, kernel, names, n_names);
    cp_event e = *proto;
    e.node = n ? n->id : 0;
    rc = cp_trace_append(slots[i].trace, &e);
  }
  pthread_rwlock_unlock(&slots_rw);
  return rc;
}

int cp_session_site_traces(const cp_launch_site *site) {
  int any = 0;
  pthread_rwlock_rdlock(&slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    any |= site_reaches(site, i) && slots[i].is_trace;
  pthread_rwlock_unlock(&slots_rw);
  return any;
}
