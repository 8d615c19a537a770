/* session/start.c -- the session layer's start side: options and name
 * expansion, the mode (periodic flushing here; the rest parsed once by the
 * backend's own table and kept per slot), backend start, and
 * activate/deactivate. The session layer is the only caller of the backend
 * registry; core below keeps the slot table (core/session_table.h). */
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
#include "core/session_table.h"
#include "core/strtab.h"
#include "core/tmetric.h"
#include "core/tmetric_replay.h"
#include "core/trace.h"
#include "io/format.h"
#include "session/session_int.h"

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
  s->periodic = cp_ss_format_for((cp_io_kind)s->is_trace, rest + 8);
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
int cp_ss_backend_users(const cp_backend_ops *b) {
  int n = 0;
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    n += cp_ss_slots[i].in_use && cp_ss_slots[i].backend == b;
  return n;
}

/* Each slot's backend configuration: the session's mode parsed once by its
 * backend (parse_mode), read by that backend's start and by same_mode when
 * a later session joins. Guarded by cp_ss_table_lock. */
static cp_backend_config configs[CP_MAX_SESSIONS];

const cp_backend_config *cp_ss_config(int slot) { return &configs[slot]; }

/* A second session on a running backend must ask for the same mode: the
 * backend serves every session with the collection the first one set up. */
static int check_mode(const session *s, const cp_backend_config *mine) {
  const cp_backend_config *running = NULL;
  for (int i = 0; i < CP_MAX_SESSIONS && !running; i++)
    if (cp_ss_slots[i].in_use && cp_ss_slots[i].backend == s->backend)
      running = &configs[i];
  if (!running || cp_backend_same_mode(s->backend, running, mine))
    return CPROTON_OK;
  return cp_error_set(CPROTON_EINVAL,
                      "Cannot add a session with the same profiler but a "
                      "different mode than existing sessions: backend '%s' "
                      "runs mode '%s', this session asks for '%s' (finalize "
                      "the other sessions first)",
                      s->backend->name, running->mode ? running->mode : "",
                      mine->mode ? mine->mode : "");
}

/* The mode is parsed here, once, by the backend's own table; a string it
 * cannot parse is EPARSE (malformed input), apart from the EINVAL of
 * unknown names: Python raises ValueError for the one (Proton's mode
 * parsers do) and RuntimeError for the other (Proton's C++). */
static int start_backend(session *s, cp_backend_config *config) {
  if (cp_backend_parse_mode(s->backend, s->mode, s->is_trace, config))
    return CPROTON_EPARSE;
  if (cp_ss_backend_users(s->backend) > 0)
    return check_mode(s, config);
  if (!s->backend->available()) {
    cp_warn("backend '%s' is not available here (%s); recording CPU scopes "
            "only", s->backend->name, cp_error_message());
    s->backend = cp_backend_cpu_fallback();
    return CPROTON_OK;
  }
  return s->backend->start(config);
}

/* Trace events past one buffer spill beside the output (same disk). */
int cp_ss_set_spill_dir(const session *s, cp_trace *t) {
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
  return s->is_trace ? cp_ss_set_spill_dir(s, s->trace) : CPROTON_OK;
}

int cproton_session_start(const cproton_session_options *o, int *session_out) {
  if (!o || !session_out)
    return cp_error_set(CPROTON_EINVAL, "options and session_out are required");
  pthread_mutex_lock(&cp_ss_table_lock);
  int slot = 0;
  while (slot < CP_MAX_SESSIONS && cp_ss_slots[slot].in_use)
    slot++;
  int rc = slot == CP_MAX_SESSIONS
               ? cp_error_set(CPROTON_ELIMIT, "more than %d sessions",
                              CP_MAX_SESSIONS)
               : CPROTON_OK;
  session *s = &cp_ss_slots[slot < CP_MAX_SESSIONS ? slot : 0];
  session fresh = {.phases = s->phases};
  const char *backend_mode = NULL;
  uint32_t start_epoch = atomic_fetch_add(&cp_ss_epoch, 1) + 1;
  if (!rc)
    rc = parse_options(o, &fresh);
  if (!rc)
    rc = parse_mode(o->mode, &fresh, &backend_mode);
  /* the backend's part of the mode: what a second session must match */
  if (!rc && backend_mode && !(fresh.mode = strdup(backend_mode)))
    rc = cp_error_set(CPROTON_ENOMEM, "out of memory starting a session");
  if (!rc)
    rc = begin_phases(&fresh, start_epoch);
  cp_backend_config config;
  if (!rc)
    rc = start_backend(&fresh, &config);
  if (rc) {
    free(fresh.mode);
    fresh.mode = NULL;
  }
  if (slot < CP_MAX_SESSIONS)
    s->phases = fresh.phases; /* the slot keeps its stores either way */
  if (!rc) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    fresh.in_use = 1;
    fresh.start_epoch = start_epoch;
    fresh.start_wall_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    fresh.id = cp_ss_next_id++;
    configs[slot] = config; /* its mode points at the slot's copy */
    pthread_rwlock_wrlock(&cp_ss_slots_rw);
    *s = fresh;
    cp_ss_publish_hot(slot);
    pthread_rwlock_unlock(&cp_ss_slots_rw);
    cp_context_fence_init();
    cp_ss_set_active(slot, 1);
    cp_context_set_main();
    *session_out = fresh.id;
  }
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

static int do_activate(int i) {
  cp_ss_set_active(i, 1);
  return CPROTON_OK;
}

/* Flushes the session's backend; on success every phase that ended before
 * the flush is complete. Caller holds table_lock. */
int cp_ss_flush_session(session *s) {
  uint32_t current = s->phases.current;
  int rc = s->backend->flush();
  if (!rc)
    cp_phases_flushed(&s->phases, current);
  return rc;
}

static int do_deactivate(int i) {
  cp_ss_set_active(i, 0);
  return cp_ss_flush_session(&cp_ss_slots[i]);
}

int cproton_session_activate(int id) { return cp_ss_each_session(id, do_activate); }
int cproton_session_deactivate(int id) {
  return cp_ss_each_session(id, do_deactivate);
}

static int do_flush_active(int i) {
  return cp_session_active_mask() & (1u << i) ? cp_ss_flush_session(&cp_ss_slots[i])
                                              : CPROTON_OK;
}

/* Once a metric was captured, the backends are flushed before the fold
 * (not guarded: a flush may deliver records on this thread), so that the
 * copy kernels' CUPTI records have queued their replays' places
 * (tmetric_replay.h). The fold itself is core's. */
int cproton_tensor_metric_fold(const uint64_t *words, size_t n_words,
                               size_t *n_folded) {
  if (n_words && cp_tmetric_captured_count() &&
      cp_ss_each_session(CPROTON_ALL_SESSIONS, do_flush_active))
    cp_warn("tensor metrics: flushing before the drain failed: %s",
            cp_error_message());
  return cp_record_tensor_metric_fold(words, n_words, n_folded);
}
