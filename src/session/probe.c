/* session/probe.c -- the cheap questions front ends ask before and after a
 * start without parsing anything themselves: which backend a session would
 * get here (each backend's probe: the driver only, no vendor tool library),
 * whether a backend's own parser takes a mode string (Python's mode
 * classes), and what a session's parsed mode asks of the front end: the
 * cubins of kernels loaded earlier, the instrumentation hook and the
 * parsed instrumentation mode it reads (no second parse). The session layer answers them because it is the only caller of
 * the backend registry. Not a hot path; any thread. */
#include <pthread.h>
#include <stddef.h>

#include "backend/backend.h"
#include "core/check.h"
#include "core/error.h"
#include "core/session.h"
#include "core/session_table.h"
#include "cproton/cproton.h"
#include "session/session_int.h"

int cproton_backend_probe(const char *backend, cproton_probe_info *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "probe: out is NULL");
  const cp_backend_ops *b = backend ? cp_backend_find(backend)
                                    : cp_backend_default_candidate();
  if (backend && !b)
    return CPROTON_EINVAL;
  if (!b)
    b = cp_backend_cpu_fallback(); /* built without a GPU backend */
  cp_backend_probe p = {0};
  b->probe(&p);
  if (!backend && !p.runs)
    b = cp_backend_cpu_fallback();
  *out = (cproton_probe_info){.backend = b->name, .runs = backend ? p.runs : 1,
                              .devices = p.devices};
  return CPROTON_OK;
}

int cproton_backend_check_mode(const char *backend, const char *mode) {
  const cp_backend_ops *b = backend ? cp_backend_find(backend)
                                    : cp_backend_cpu_fallback();
  if (!b)
    return CPROTON_EINVAL;
  cp_backend_config config;
  return cp_backend_parse_mode(b, mode, 0, &config);
}

/* A question about a session's parsed mode, asked of the backend that
 * parsed it (a session that fell back to the CPU-only backend keeps its own
 * backend's configuration), under the table lock. */
typedef int (*config_question)(const cp_backend_config *c, void *out);

static int ask_session(int id, config_question ask, void *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "out is NULL");
  pthread_mutex_lock(&cp_ss_table_lock);
  int slot;
  int rc = cp_ss_find_slot(id, &slot);
  if (!rc)
    rc = ask(cp_ss_config(slot), out);
  pthread_mutex_unlock(&cp_ss_table_lock);
  return rc;
}

static int wants_cubins(const cp_backend_config *c, void *out) {
  const cp_backend_ops *b = c->parsed_by;
  *(int *)out = b && b->wants_loaded_cubins && b->wants_loaded_cubins(c);
  return CPROTON_OK;
}

int cproton_session_wants_loaded_cubins(int id, int *out) {
  return ask_session(id, wants_cubins, out);
}

static int wants_hook(const cp_backend_config *c, void *out) {
  *(int *)out = c->parsed_by && c->parsed_by->instruments_kernels;
  return CPROTON_OK;
}

int cproton_session_wants_instrumentation_hook(int id, int *out) {
  return ask_session(id, wants_hook, out);
}

static int instr_info(const cp_backend_config *c, void *out) {
  const cp_backend_ops *b = c->parsed_by;
  if (!b || !b->instruments_kernels)
    return cp_error_set(CPROTON_EINVAL, "the session's backend '%s' does not instrument kernels",
                        b ? b->name : "none");
  CP_ASSERT(b->instr_mode_info); /* every in-kernel backend describes its mode */
  return b->instr_mode_info(c, out);
}

int cproton_session_instr_mode(int id, cproton_instr_mode_info *out) {
  return ask_session(id, instr_info, out);
}
