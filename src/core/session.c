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

#include "backend/backend.h"
#include "core/clock.h"
#include "core/compat.h"
#include "core/error.h"
#include "core/log.h"
#include "core/native.h"
#include "core/phase.h"
#include "core/kernel_times.h"
#include "core/session.h"
#include "core/strtab.h"
#include "core/tmetric.h"
#include "core/tmetric_replay.h"
#include "core/trace.h"
#include "io/format.h"

typedef struct session {
  int in_use;
  int id;               /* the public id: never reused in a process */
  uint32_t start_epoch;
  cp_context_kind kind;
  int is_trace, gzip;
  int rank; /* options' rank, -1 when unknown */
  const cp_backend_ops *backend;
  char *mode;          /* the backend's mode (periodic_flushing excluded) */
  char path[PATH_MAX]; /* without extension */
  cp_data *data;       /* the current phase's store (scopes, user metrics) */
  cp_trace *trace;     /* the current phase's trace */
  cp_phases phases;    /* persistent per slot; stores are reused */
  const cp_io_format *periodic; /* mode="periodic_flushing": parts' format */
  int skip_if_no_kernels;
  int64_t start_wall_ns;    /* CLOCK_REALTIME at start: files other
                               processes wrote since are never replaced */
  _Atomic uint64_t kernels; /* kernel records delivered */
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
static atomic_uint compactions; /* times the tree and scoped names were freed */

/* What scope and metric calls read of a slot without a lock: a thread that
 * read the active mask just before a finalize and a new start (or a phase
 * change) in the same slot may still read them, so they live here as
 * atomics, apart from the slot that `*s = fresh` rewrites under slots_rw. */
static struct {
  atomic_uint kind;
  _Atomic(cp_data *) data;
  _Atomic(cp_trace *) trace;
} hot[CP_MAX_SESSIONS];

/* Publishes slot `i`'s kind, data and trace; caller holds slots_rw. */
static void publish_hot(int i) {
  atomic_store_explicit(&hot[i].kind, (unsigned)slots[i].kind, memory_order_relaxed);
  atomic_store_explicit(&hot[i].data, slots[i].data, memory_order_release);
  atomic_store_explicit(&hot[i].trace, slots[i].trace, memory_order_release);
}

static cp_context_kind hot_kind(int i) {
  return (cp_context_kind)atomic_load_explicit(&hot[i].kind, memory_order_relaxed);
}
static cp_data *hot_data(int i) {
  return atomic_load_explicit(&hot[i].data, memory_order_acquire);
}
static cp_trace *hot_trace(int i) {
  return atomic_load_explicit(&hot[i].trace, memory_order_acquire);
}

/* Sequentially consistent: inside a guard (cp_context_guard_begin) this
 * load and the guard's store pair with compact_if_idle's (Dekker). A plain
 * load on x86 and a load-acquire on Arm. */
uint32_t cp_session_active_mask(void) { return atomic_load(&active_mask); }

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
  cp_context_touch(); /* every launch site's sessions changed */
}

/* ---- start ----------------------------------------------------------------- */

int cproton_session_options_init(cproton_session_options *o) {
  if (!o)
    return cp_error_set(CPROTON_EINVAL, "session options pointer is NULL");
  memset(o, 0, sizeof *o);
  o->rank = -1;
  o->local_rank = -1;
  return CPROTON_OK;
}

int cp_session_expand_name(const cproton_session_options *o, char *out,
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
      return cp_error_set(CPROTON_ELIMIT, "session name too long");
    memcpy(out + n, num, k + 1);
    n += k;
  }
  return CPROTON_OK;
}

static const cp_io_format *format_for(cp_io_kind kind, const char *name);

/* mode="periodic_flushing[:format=<name>]" belongs to the session (Proton
 * 3.9's spelling); any other mode goes to the backend. Sets *backend_mode. */
static int parse_mode(const char *mode, session *s, const char **backend_mode) {
  static const char prefix[] = "periodic_flushing";
  *backend_mode = mode;
  if (!mode || strncmp(mode, prefix, sizeof prefix - 1) != 0)
    return CPROTON_OK;
  const char *rest = mode + sizeof prefix - 1;
  *backend_mode = NULL;
  if (*rest == '\0') {
    s->periodic = cp_io_format_default((cp_io_kind)s->is_trace);
    return CPROTON_OK;
  }
  if (strncmp(rest, ":format=", 8) != 0)
    return cp_error_set(CPROTON_EPARSE,
                        "bad mode '%s' (expected periodic_flushing or "
                        "periodic_flushing:format=<name>)", mode);
  s->periodic = format_for((cp_io_kind)s->is_trace, rest + 8);
  return s->periodic ? CPROTON_OK : CPROTON_EPARSE; /* 3.9: ValueError */
}

/* Native stacks: available (warmed up), and where file:line comes from. */
static int native_ready(const cproton_session_options *o, session *s) {
  const char *why;
  if (!cp_native_available(&why))
    return cp_error_set(CPROTON_EINVAL, "context 'native' is unavailable: %s",
                        why);
  cp_info("context 'native': unwinding with %s%s", cp_native_unwinder(),
          strcmp(cp_native_unwinder(), "libunwind") == 0
              ? ""
              : " (libunwind.so.8 not found: ~10-25x slower per launch)");
  if (!cp_native_lines_available(&why))
    cp_info("context 'native': frames without file:line (%s)", why);
  s->backend = o->backend ? cp_backend_find(o->backend) : cp_backend_default();
  if (!s->backend)
    return CPROTON_EINVAL;
  return cp_session_expand_name(o, s->path, sizeof s->path);
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
  s->skip_if_no_kernels = o->skip_if_no_kernels;
  s->rank = o->rank;
  if (s->kind == CP_CONTEXT_NATIVE)
    return native_ready(o, s);
  if (!cp_context_source_ready(s->kind))
    return cp_error_set(CPROTON_EINVAL,
                        "context '%s' has no registered source (import "
                        "cproton in Python to get one)", o->context);
  s->backend = o->backend ? cp_backend_find(o->backend) : cp_backend_default();
  if (!s->backend)
    return CPROTON_EINVAL;
  return cp_session_expand_name(o, s->path, sizeof s->path);
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

/* A mode string the backend cannot parse is EPARSE (malformed input), apart
 * from the EINVAL of unknown names: Python raises ValueError for the one
 * (Proton's mode parsers do) and RuntimeError for the other (Proton's C++). */
static int start_backend(session *s, const char *mode) {
  if (s->backend->check_mode && s->backend->check_mode(mode))
    return CPROTON_EPARSE;
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

/* Trace events past one buffer spill beside the output (same disk). */
static int set_spill_dir(const session *s, cp_trace *t) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", s->path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  return cp_trace_set_spill_dir(t, dir);
}

/* Phase 0 of a new session in the slot: stores are taken from the slot's
 * spare ones, so a slot reused over a long run allocates nothing. */
static int begin_phases(session *s, uint32_t at) {
  int rc = cp_phases_begin(&s->phases, at);
  if (rc)
    return rc;
  s->data = cp_phases_current(&s->phases)->data;
  s->trace = cp_phases_current(&s->phases)->trace;
  return s->is_trace ? set_spill_dir(s, s->trace) : CPROTON_OK;
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
  session fresh = {.phases = s->phases};
  const char *backend_mode = NULL;
  uint32_t start_epoch = atomic_fetch_add(&epoch, 1) + 1;
  if (!rc)
    rc = parse_options(o, &fresh);
  if (!rc)
    rc = parse_mode(o->mode, &fresh, &backend_mode);
  if (!rc)
    rc = begin_phases(&fresh, start_epoch);
  if (!rc)
    rc = start_backend(&fresh, backend_mode);
  /* the backend's part of the mode: what a second session must match */
  if (!rc && backend_mode && !(fresh.mode = strdup(backend_mode)))
    rc = cp_error_set(CPROTON_ENOMEM, "out of memory starting a session");
  if (slot < CP_MAX_SESSIONS)
    s->phases = fresh.phases; /* the slot keeps its stores either way */
  if (!rc) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    fresh.in_use = 1;
    fresh.start_epoch = start_epoch;
    fresh.start_wall_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    fresh.id = next_id++;
    pthread_rwlock_wrlock(&slots_rw);
    *s = fresh;
    publish_hot(slot);
    pthread_rwlock_unlock(&slots_rw);
    cp_context_fence_init();
    set_active(slot, 1);
    cp_context_set_main();
    *session_out = fresh.id;
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

/* Flushes the session's backend; on success every phase that ended before
 * the flush is complete. Caller holds table_lock. */
static int flush_session(session *s) {
  uint32_t current = s->phases.current;
  int rc = s->backend->flush();
  if (!rc)
    cp_phases_flushed(&s->phases, current);
  return rc;
}

static int do_deactivate(int i) {
  set_active(i, 0);
  return flush_session(&slots[i]);
}

int cproton_session_activate(int id) { return each_session(id, do_activate); }
int cproton_session_deactivate(int id) {
  return each_session(id, do_deactivate);
}

static _Thread_local const cp_io_format *finalize_format;

/* Kernel-timing sessions (every backend but instrumentation) write zeroed
 * kernel metrics on ROOT, as Proton does. */
static int kernel_root(const session *s) {
  return strcmp(s->backend->name, "instrumentation") != 0;
}

/* The format `name` names for sessions recording `kind` (the default one
 * when `name` is NULL or empty); NULL with EINVAL listing the valid names. */
static const cp_io_format *format_for(cp_io_kind kind, const char *name) {
  if (!name || !*name)
    return cp_io_format_default(kind);
  const cp_io_format *f = cp_io_format_find(name);
  if (f && f->kind != kind) {
    char valid[128];
    cp_io_format_names((int)kind, valid, sizeof valid);
    cp_error_set(CPROTON_EINVAL,
                 "output format '%s' writes %s data, this session records "
                 "data=\"%s\" (valid: %s)", name,
                 f->kind == CP_IO_TREE ? "tree" : "trace",
                 kind == CP_IO_TREE ? "tree" : "trace", valid);
    return NULL;
  }
  return f;
}

/* The file of phase `number`: the session's path, plus ".part_<number>"
 * once the session has advanced past phase 0 (Proton 3.9's names:
 * "<name>.part_<phase>.<format>"). */
static int phase_path(const session *s, const cp_io_format *f,
                      uint32_t number, char *out, size_t size) {
  char base[PATH_MAX + 32];
  size_t n = strlen(s->path), k = strlen(f->extension);
  if (n >= k && strcmp(s->path + n - k, f->extension) == 0)
    n -= k; /* "x.hatchet" names the same file as "x" */
  if (s->phases.current == 0)
    snprintf(base, sizeof base, "%.*s", (int)n, s->path);
  else
    snprintf(base, sizeof base, "%.*s.part_%u", (int)n, s->path, number);
  return cp_io_format_path(f, base, s->gzip, out, size);
}

static int write_phase(session *s, const cp_phase *p, const cp_io_format *f) {
  char path[PATH_MAX + 64];
  int rc = phase_path(s, f, p->number, path, sizeof path);
  const char *base = strrchr(s->path, '/');
  cp_io_input in = {.data = p->data, .trace = p->trace,
                    .kernel_root = kernel_root(s), .rank = s->rank,
                    .label = base ? base + 1 : s->path};
  cp_native_symbolize(); /* names new native frames, once per address */
  if (f->kind == CP_IO_TRACE && cp_trace_dropped(p->trace))
    cp_warn("trace: %zu events were dropped (trace cap, memory or disk)",
            cp_trace_dropped(p->trace));
  if (!rc)
    rc = cp_io_format_write_file(f, path, s->gzip, s->start_wall_ns, &in,
                                 NULL, 0);
  if (s->phases.current == 0) /* one file: the caller reports its error */
    return rc;
  cp_phases_note_part(&s->phases, p->number, rc == CPROTON_OK);
  if (rc) /* every lost part is named, not only the last error */
    cp_warn("session %d: phase %u was not written to '%s': %s", s->id,
            p->number, path, cp_error_message());
  return rc;
}

/* Finalize's account of the parts the session could not write (at an
 * advance or now): a warning, and when finalize's own writes failed (rc),
 * an error naming every lost phase rather than the last one's reason. */
static int report_lost_parts(const session *s, int rc) {
  if (s->phases.n_failed == 0)
    return rc;
  char list[128];
  cp_phases_failed_list(&s->phases, list, sizeof list);
  cp_warn("session %d: %u of %u parts were not written (phases %s); their "
          "data is lost", s->id, s->phases.n_failed, s->phases.n_parts, list);
  if (rc != CPROTON_EIO) /* OK, or an error that is not about the disk */
    return rc;
  return cp_error_set(rc, "session %d: %u of %u parts were not written "
                      "(phases %s; each is named in a warning)", s->id,
                      s->phases.n_failed, s->phases.n_parts, list);
}

/* Writes every live phase (one file, or one part per phase). */
static int write_output(session *s, const cp_io_format *f) {
  int rc = CPROTON_OK;
  for (size_t k = 0; k < s->phases.n_live; k++) {
    int r = write_phase(s, &s->phases.live[k], f);
    rc = rc ? rc : r;
  }
  return rc;
}

static void report_late(const session *s) {
  uint64_t late = atomic_load(&s->phases.late);
  if (late)
    cp_warn("session %d: %llu records arrived after their phase had been "
            "written or cleared; they were dropped", s->id,
            (unsigned long long)late);
}

/* Native stacks: what the unwinding cost, and launches left without their
 * native frames (never silently). */
static void report_native(void) {
  cp_native_stats st;
  cp_native_get_stats(&st);
  cp_info("native stacks: %llu captured, %llu known, %llu new, %llu "
          "distinct addresses", (unsigned long long)st.unwinds,
          (unsigned long long)st.hits, (unsigned long long)st.misses,
          (unsigned long long)st.addresses);
  if (st.full)
    cp_warn("native stacks: %llu launches placed under their scope without "
            "native frames (table of %u stacks full, or out of memory)",
            (unsigned long long)st.full, CP_NATIVE_MAX_STACKS);
}

static int do_finalize(int i) {
  session *s = &slots[i];
  int was_active = cp_session_active_mask() >> i & 1;
  set_active(i, 0);
  int rc = flush_session(s);
  if (rc)
    cp_warn("flushing backend '%s' failed: %s", s->backend->name,
            cp_error_message());
  report_late(s);
  if (s->kind == CP_CONTEXT_NATIVE)
    report_native();
  int wrc = CPROTON_OK;
  if (s->skip_if_no_kernels && atomic_load(&s->kernels) == 0)
    cp_info("process %d, session %d ran no kernel; nothing written to '%s'",
            (int)getpid(), s->id, s->path);
  else
    rc = wrc = write_output(s, finalize_format ? finalize_format
                         : s->periodic ? s->periodic
                         : cp_io_format_default((cp_io_kind)s->is_trace));
  rc = report_lost_parts(s, rc);
  if (wrc && wrc != CPROTON_EIO) { /* nothing written (out of memory): keep it */
    set_active(i, was_active);
    return wrc;
  }
  pthread_rwlock_wrlock(&slots_rw);
  s->in_use = 0;
  const cp_backend_ops *unused =
      backend_users(s->backend) == 0 ? s->backend : NULL;
  cp_phases_clear(&s->phases, UINT32_MAX, 1);
  free(s->mode);
  s->mode = NULL;
  pthread_rwlock_unlock(&slots_rw);
  /* Stopped outside slots_rw: a stop flushes, and records it delivers on
   * another thread take slots_rw for reading. */
  if (unused)
    unused->stop();
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
    cp_phases_trim(&slots[i].phases);
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
static void compact_if_idle(void) {
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    if (slots[i].in_use)
      return;
  pthread_rwlock_wrlock(&slots_rw);
  paths_unsaved = 0, paths_on_root = 0;
  if (cp_context_compact(reset_tables))
    atomic_fetch_add(&compactions, 1);
  pthread_rwlock_unlock(&slots_rw);
  if (paths_unsaved)
    cp_warn("out of memory saving tensor-metric slots: scope names are kept "
            "until a later finalize");
  if (paths_on_root)
    cp_warn("tensor metrics: out of memory re-creating %zu slots' scopes after "
            "the context tree was freed; their values go to ROOT",
            paths_on_root);
}

unsigned cp_session_compactions(void) { return atomic_load(&compactions); }

/* Checks the format against every session it applies to before any is
 * finalized: a bad name must not cost the user their data. */
static int check_format(int id, const char *format) {
  pthread_mutex_lock(&table_lock);
  int rc = CPROTON_OK;
  for (int i = 0; i < CP_MAX_SESSIONS && !rc; i++)
    if (slots[i].in_use && (id == CPROTON_ALL_SESSIONS || slots[i].id == id) &&
        !format_for((cp_io_kind)slots[i].is_trace, format))
      rc = CPROTON_EINVAL;
  pthread_mutex_unlock(&table_lock);
  return rc;
}

int cp_session_format_check(int is_trace, const char *format) {
  return format_for(is_trace ? CP_IO_TRACE : CP_IO_TREE, format)
             ? CPROTON_OK
             : CPROTON_EINVAL;
}

int cproton_format_check(const char *format) {
  if (!format || !*format)
    return CPROTON_OK;
  return cp_io_format_find(format) ? CPROTON_OK : CPROTON_EINVAL;
}

int cproton_session_finalize(int id, const char *format) {
  int rc = check_format(id, format);
  if (rc)
    return rc;
  finalize_format = format && *format ? cp_io_format_find(format) : NULL;
  rc = each_session(id, do_finalize);
  pthread_mutex_lock(&table_lock);
  compact_if_idle();
  pthread_mutex_unlock(&table_lock);
  return rc;
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

/* ---- phases (Proton 3.9's proton.data API) ------------------------------- */

int cproton_session_data(int id, int64_t phase, const char *format,
                         char **buf_out, size_t *size_out) {
  if (!buf_out)
    return cp_error_set(CPROTON_EINVAL, "buf_out is required");
  pthread_mutex_lock(&table_lock);
  int slot = 0;
  int rc = find_slot(id, &slot);
  session *s = rc ? NULL : &slots[slot];
  /* Any format may render a live phase: a trace session records its tree
   * too, so "hatchet" of it is meaningful (finalize is stricter). */
  const cp_io_format *f =
      !s ? NULL
      : format && *format ? cp_io_format_find(format)
                          : cp_io_format_default((cp_io_kind)s->is_trace);
  if (s && !f)
    rc = CPROTON_EINVAL;
  if (!rc)
    rc = flush_session(s);
  cp_phase *p = NULL;
  if (!rc && !(p = phase < 0 ? cp_phases_current(&s->phases)
                 : phase > UINT32_MAX ? NULL
                 : cp_phases_find(&s->phases, (uint32_t)phase)))
    rc = cp_error_set(CPROTON_ENOTFOUND,
                      "phase %lld of session %d has no data (cleared, "
                      "written, or not started)", (long long)phase, id);
  if (!rc) {
    cp_native_symbolize();
    cp_io_input in = {.data = p->data, .trace = p->trace,
                      .kernel_root = kernel_root(s)};
    rc = cp_io_format_write_memory(f, &in, buf_out, size_out);
  }
  pthread_mutex_unlock(&table_lock);
  return rc;
}

int cproton_session_data_json(int id, char **json_out, size_t *size_out) {
  return cproton_session_data(id, -1, "hatchet", json_out, size_out);
}

/* Periodic flushing: writes every complete phase as its part file and
 * gives its stores back, so a long run holds only the phases in flight.
 * Caller holds table_lock. */
static int write_complete_phases(session *s) {
  int rc = CPROTON_OK;
  for (size_t k = 0; k < s->phases.n_live;) {
    cp_phase *p = &s->phases.live[k];
    if (!cp_phases_complete(&s->phases, p->number)) {
      k++;
      continue;
    }
    /* Exclusive: a late record must not append while the phase renders. */
    pthread_rwlock_wrlock(&slots_rw);
    int r = write_phase(s, p, s->periodic); /* names a failure itself */
    rc = rc ? rc : r;
    cp_phases_clear(&s->phases, p->number, 0);
    pthread_rwlock_unlock(&slots_rw);
  }
  return rc;
}

int cproton_session_advance_phase(int id, uint32_t *phase_out) {
  pthread_mutex_lock(&table_lock);
  int slot = 0;
  int rc = find_slot(id, &slot);
  session *s = &slots[slot];
  uint32_t number = 0;
  if (!rc) {
    uint32_t at = atomic_fetch_add(&epoch, 1) + 1;
    cp_context_touch(); /* sites now carry the new epoch */
    pthread_rwlock_wrlock(&slots_rw);
    rc = cp_phases_advance(&s->phases, at, &number);
    if (!rc) {
      s->data = cp_phases_current(&s->phases)->data;
      s->trace = cp_phases_current(&s->phases)->trace;
      publish_hot(slot);
      if (s->is_trace)
        set_spill_dir(s, s->trace);
    }
    pthread_rwlock_unlock(&slots_rw);
  }
  /* Deliver what the ended phases launched; phases before the newest one
   * that received records are then complete and go to disk. */
  if (!rc && s->periodic && !(rc = s->backend->flush())) {
    if (s->backend->flush_is_complete) /* the ended phase is complete too */
      cp_phases_flushed(&s->phases, number);
    rc = write_complete_phases(s);
  }
  if (!rc && phase_out)
    *phase_out = number;
  pthread_mutex_unlock(&table_lock);
  return rc;
}

int cproton_session_phase_complete(int id, uint32_t phase, int *complete_out) {
  if (!complete_out)
    return cp_error_set(CPROTON_EINVAL, "complete_out is required");
  pthread_mutex_lock(&table_lock);
  int slot = 0;
  int rc = find_slot(id, &slot);
  *complete_out = rc ? 0 : cp_phases_complete(&slots[slot].phases, phase);
  pthread_mutex_unlock(&table_lock);
  return rc;
}

int cproton_session_clear(int id, uint32_t phase, int up_to) {
  pthread_mutex_lock(&table_lock);
  int slot = 0;
  int rc = find_slot(id, &slot);
  if (!rc) {
    pthread_rwlock_wrlock(&slots_rw);
    cp_phases_clear(&slots[slot].phases, phase, up_to);
    pthread_rwlock_unlock(&slots_rw);
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
    if (slots[i].phases.n_live)
      cp_phases_clear(&slots[i].phases, UINT32_MAX, 1);
    free(slots[i].mode);
    slots[i].mode = NULL;
  }
  pthread_rwlock_unlock(&slots_rw);
  for (int i = 0; i < n_stop; i++) /* outside slots_rw, as in finalize */
    to_stop[i]->stop();
  compact_if_idle();
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
    cp_node *n = cp_context_frame_node(f, hot_kind(i));
    cp_data *d = hot_data(i);
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
    return 0; /* intern() checks the length */
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
    int i = __builtin_ctz(mask);
    cp_node *n = f->node[hot_kind(i)];
    e.node = n ? n->id : 0;
    cp_trace_append(hot_trace(i), &e);
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
    cp_node *n = cp_context_launch_node(hot_kind(i), &is_op);
    if (!is_op)
      return cp_error_set(CPROTON_ESTATE, "no op is open on this thread");
    rc = cp_data_add_metric(hot_data(i), n, name_id, v);
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
    int i = __builtin_ctz(mask);
    cp_node *n = f ? cp_context_frame_node(f, hot_kind(i)) : cp_cct_root();
    if (!n)
      n = cp_context_top(hot_kind(i));
    rc = cp_data_add_metric(hot_data(i), n, name_id, v);
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
  int rc = slot_out ? intern(name, "metric", &name_id)
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
    cp_context_kind k = hot_kind(__builtin_ctz(mask));
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
    const cp_node *n = node[hot_kind(i)];
    int r = n ? cp_data_add_metric(hot_data(i), n, s->name, v) : CPROTON_OK;
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

static int do_flush_active(int i) {
  return cp_session_active_mask() & (1u << i) ? flush_session(&slots[i])
                                              : CPROTON_OK;
}

/* Guarded: folding reads slots' nodes, which compaction re-points. Once a
 * metric was captured, the backends are flushed first (not guarded: a
 * flush may deliver records on this thread), so that the copy kernels'
 * CUPTI records have queued their replays' places (tmetric_replay.h). */
int cproton_tensor_metric_fold(const uint64_t *words, size_t n_words,
                               size_t *n_folded) {
  if (n_words && cp_tmetric_captured_count() &&
      each_session(CPROTON_ALL_SESSIONS, do_flush_active))
    cp_warn("tensor metrics: flushing before the drain failed: %s",
            cp_error_message());
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
  return intern(name, "frame", id_out);
}

int cproton_context_register(const char *name, cproton_unwind_fn fn,
                             void *user) {
  cp_context_kind kind;
  int rc = cp_context_kind_parse(name, &kind);
  return rc ? rc : cp_context_source_set(kind, fn, user);
}

/* ---- backends' side ---------------------------------------------------------- */

int cp_session_sites_shared(void) {
  return atomic_load(&active_kinds) == 1u << CP_CONTEXT_SHADOW &&
         atomic_load(&trace_mask) == 0;
}

static void capture(cp_launch_site *site) {
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

/* With no session active a launch touches nothing shared: no guard. */
void cp_session_capture(cp_launch_site *site) {
  if (!cp_session_active_mask() ||
      cp_context_guard_begin()) { /* no thread state: records nothing */
    memset(site, 0, sizeof *site);
    site->epoch = atomic_load_explicit(&epoch, memory_order_acquire);
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
  return (site->sessions >> i & 1) && slots[i].in_use &&
         slots[i].start_epoch <= site->epoch;
}

/* The phase of session i a record launched at `site` belongs to, or NULL
 * (counted as late) when that phase was written or cleared already.
 * Caller: slots_rw. */
static cp_phase *site_phase(const cp_launch_site *site, int i) {
  cp_phases *ps = &slots[i].phases;
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
                .end_ns = r->end_ns, .launch_ns = site->launch_ns,
                .name = n->name, .node = n->id, .lane = r->stream_id,
                .device = r->device_id, .launch_lane = site->thread,
                .correlation = r->correlation_id, .group = r->graph_id};
  cp_trace_append(t, &e);
}

int cp_session_deliver_kernel(const cp_launch_site *site,
                              const cp_kernel_record *r) {
  int rc = CPROTON_OK;
  uint64_t dur = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
  cp_ktimes_put(r->name, site->launch_ns, r->start_ns, r->end_ns); /* regions align to it */
  pthread_rwlock_rdlock(&slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS; i++) {
    if (!site_reaches(site, i))
      continue;
    session *s = &slots[i];
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
    if (s->is_trace)
      trace_kernel(p->trace, site, r, n);
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
    cp_phase *p = site_phase(site, i);
    if (!p)
      continue;
    cp_node *n = path_node(site, slots[i].kind, kernel, names, n_names);
    rc = n ? cp_data_add_metric(p->data, n, metric, v) : CPROTON_ENOMEM;
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
    cp_phase *p = site_phase(site, i);
    if (!p)
      continue;
    cp_node *n = path_node(site, slots[i].kind, kernel, names, n_names);
    cp_event e = *proto;
    e.node = n ? n->id : 0;
    rc = cp_trace_append(p->trace, &e);
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
