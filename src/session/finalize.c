/* session/finalize.c -- the session layer's end side: format choice,
 * finalize (periodic phases, output files), session data and phases, and
 * resetting all sessions. The only caller of io/format.c's table. */
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

static _Thread_local const cp_io_format *finalize_format;

/* Kernel-timing sessions write zeroed kernel metrics on ROOT, as Proton
 * does (the backend's times_kernels flag). */
static int kernel_root(const session *s) { return s->backend->times_kernels; }

/* The format `name` names for sessions recording `kind` (the default one
 * when `name` is NULL or empty); NULL with EINVAL listing the valid names. */
const cp_io_format *cp_ss_format_for(cp_io_kind kind, const char *name) {
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
  session *s = &cp_ss_slots[i];
  int was_active = cp_session_active_mask() >> i & 1;
  cp_ss_set_active(i, 0);
  int rc = cp_ss_flush_session(s);
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
    cp_ss_set_active(i, was_active);
    return wrc;
  }
  pthread_rwlock_wrlock(&cp_ss_slots_rw);
  s->in_use = 0;
  const cp_backend_ops *unused =
      cp_ss_backend_users(s->backend) == 0 ? s->backend : NULL;
  cp_phases_clear(&s->phases, UINT32_MAX, 1);
  free(s->mode);
  s->mode = NULL;
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  /* Stopped outside slots_rw: a stop flushes, and records it delivers on
   * another thread take slots_rw for reading. */
  if (unused)
    unused->stop();
  return rc;
}


/* Checks the format against every session it applies to before any is
 * finalized: a bad name must not cost the user their data. */
static int check_format(int id, const char *format) {
  pthread_mutex_lock(&cp_ss_table_lock);
  int rc = CPROTON_OK;
  for (int i = 0; i < CP_MAX_SESSIONS && !rc; i++)
    if (cp_ss_slots[i].in_use && (id == CPROTON_ALL_SESSIONS || cp_ss_slots[i].id == id) &&
        !cp_ss_format_for((cp_io_kind)cp_ss_slots[i].is_trace, format))
      rc = CPROTON_EINVAL;
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

int cp_session_format_check(int is_trace, const char *format) {
  return cp_ss_format_for(is_trace ? CP_IO_TRACE : CP_IO_TREE, format)
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
  rc = cp_ss_each_session(id, do_finalize);
  pthread_mutex_lock(&cp_ss_table_lock);
  cp_ss_compact_if_idle();
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

int cproton_session_output_path(int id, char *buf, size_t size) {
  pthread_mutex_lock(&cp_ss_table_lock);
  int slot = 0;
  int rc = cp_ss_find_slot(id, &slot);
  if (!rc && buf && size)
    snprintf(buf, size, "%s", cp_ss_slots[slot].path);
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

/* ---- phases (Proton 3.9's proton.data API) ------------------------------- */

int cproton_session_data(int id, int64_t phase, const char *format,
                         char **buf_out, size_t *size_out) {
  if (!buf_out)
    return cp_error_set(CPROTON_EINVAL, "buf_out is required");
  pthread_mutex_lock(&cp_ss_table_lock);
  int slot = 0;
  int rc = cp_ss_find_slot(id, &slot);
  session *s = rc ? NULL : &cp_ss_slots[slot];
  /* Any format may render a live phase: a trace session records its tree
   * too, so "hatchet" of it is meaningful (finalize is stricter). */
  const cp_io_format *f =
      !s ? NULL
      : format && *format ? cp_io_format_find(format)
                          : cp_io_format_default((cp_io_kind)s->is_trace);
  if (s && !f)
    rc = CPROTON_EINVAL;
  if (!rc)
    rc = cp_ss_flush_session(s);
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
  pthread_mutex_unlock(&cp_ss_table_lock);
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
    pthread_rwlock_wrlock(&cp_ss_slots_rw);
    int r = write_phase(s, p, s->periodic); /* names a failure itself */
    rc = rc ? rc : r;
    cp_phases_clear(&s->phases, p->number, 0);
    pthread_rwlock_unlock(&cp_ss_slots_rw);
  }
  return rc;
}

int cproton_session_advance_phase(int id, uint32_t *phase_out) {
  pthread_mutex_lock(&cp_ss_table_lock);
  int slot = 0;
  int rc = cp_ss_find_slot(id, &slot);
  session *s = &cp_ss_slots[slot];
  uint32_t number = 0;
  if (!rc) {
    uint32_t at = atomic_fetch_add(&cp_ss_epoch, 1) + 1;
    cp_context_touch(); /* sites now carry the new epoch */
    pthread_rwlock_wrlock(&cp_ss_slots_rw);
    rc = cp_phases_advance(&s->phases, at, &number);
    if (!rc) {
      s->data = cp_phases_current(&s->phases)->data;
      s->trace = cp_phases_current(&s->phases)->trace;
      cp_ss_publish_hot(slot);
      if (s->is_trace)
        cp_ss_set_spill_dir(s, s->trace);
    }
    pthread_rwlock_unlock(&cp_ss_slots_rw);
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
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

int cproton_session_phase_complete(int id, uint32_t phase, int *complete_out) {
  if (!complete_out)
    return cp_error_set(CPROTON_EINVAL, "complete_out is required");
  pthread_mutex_lock(&cp_ss_table_lock);
  int slot = 0;
  int rc = cp_ss_find_slot(id, &slot);
  *complete_out = rc ? 0 : cp_phases_complete(&cp_ss_slots[slot].phases, phase);
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

int cproton_session_clear(int id, uint32_t phase, int up_to) {
  pthread_mutex_lock(&cp_ss_table_lock);
  int slot = 0;
  int rc = cp_ss_find_slot(id, &slot);
  if (!rc) {
    pthread_rwlock_wrlock(&cp_ss_slots_rw);
    cp_phases_clear(&cp_ss_slots[slot].phases, phase, up_to);
    pthread_rwlock_unlock(&cp_ss_slots_rw);
  }
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

void cproton_free(void *ptr) { free(ptr); }

int cproton_session_count(void) {
  pthread_mutex_lock(&cp_ss_table_lock);
  int n = 0;
  for (int i = 0; i < CP_MAX_SESSIONS; i++)
    n += cp_ss_slots[i].in_use;
  pthread_mutex_unlock(&cp_ss_table_lock);
  return n;
}

void cp_session_reset_all(void) {
  pthread_mutex_lock(&cp_ss_table_lock);
  const cp_backend_ops *to_stop[CP_MAX_SESSIONS];
  int n_stop = 0;
  pthread_rwlock_wrlock(&cp_ss_slots_rw);
  for (int i = 0; i < CP_MAX_SESSIONS; i++) {
    if (cp_ss_slots[i].in_use) {
      cp_ss_set_active(i, 0);
      cp_ss_slots[i].in_use = 0;
      if (cp_ss_backend_users(cp_ss_slots[i].backend) == 0)
        to_stop[n_stop++] = cp_ss_slots[i].backend;
    }
    if (cp_ss_slots[i].phases.n_live)
      cp_phases_clear(&cp_ss_slots[i].phases, UINT32_MAX, 1);
    free(cp_ss_slots[i].mode);
    cp_ss_slots[i].mode = NULL;
  }
  pthread_rwlock_unlock(&cp_ss_slots_rw);
  for (int i = 0; i < n_stop; i++) /* outside slots_rw, as in finalize */
    to_stop[i]->stop();
  cp_ss_compact_if_idle();
  pthread_mutex_unlock(&cp_ss_table_lock);
}

void cp_session_threads_independent(void) { cp_context_clear_main(); }
