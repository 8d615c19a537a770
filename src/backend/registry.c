/* backend/registry.c -- the table of compiled-in backends; the one place
 * that knows which exist. Not a hot path. Called by the session layer (session/start.c). */
#include <stddef.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"

extern const cp_backend_ops cp_none_backend;
#ifdef CPROTON_TEST_BACKENDS
extern const cp_backend_ops cp_fake_backend;
extern const cp_backend_ops cp_skeleton_backend;
#endif
extern const cp_backend_ops cp_instrumentation_backend;
#ifdef CPROTON_HAVE_CUPTI
extern const cp_backend_ops cp_cupti_backend;
#endif

static const cp_backend_ops *const backends[] = {
#ifdef CPROTON_HAVE_CUPTI
    &cp_cupti_backend,
#endif
    &cp_instrumentation_backend,
    &cp_none_backend,
#ifdef CPROTON_TEST_BACKENDS /* test doubles: never in the wheel */
    &cp_fake_backend,
    &cp_skeleton_backend,
#endif
};
#define N_BACKENDS (sizeof backends / sizeof *backends)

const cp_backend_ops *cp_backend_find(const char *name) {
  char valid[256] = "";
  for (size_t i = 0; i < N_BACKENDS; i++) {
    if (strcmp(backends[i]->name, name) == 0)
      return backends[i];
    strncat(valid, i ? ", " : "", sizeof valid - strlen(valid) - 1);
    strncat(valid, backends[i]->name, sizeof valid - strlen(valid) - 1);
  }
  cp_error_set(CPROTON_EINVAL, "unknown backend '%s' (valid here: %s)", name,
               valid);
  return NULL;
}

#ifndef CPROTON_HAVE_CUPTI
#include "cproton/cproton.h"
/* Without CUPTI there is no PC sampling to hand cubins to. */
int cproton_pcsampling_add_cubin(const void *cubin, size_t size) {
  (void)cubin, (void)size;
  return cp_error_set(CPROTON_EUNSUPPORTED,
                      "cproton was built without CUPTI: no PC sampling");
}
#endif

const cp_backend_ops *cp_backend_default_candidate(void) {
  for (size_t i = 0; i < N_BACKENDS; i++)
    if (backends[i]->is_default_candidate)
      return backends[i];
  return NULL;
}

const cp_backend_ops *cp_backend_cpu_fallback(void) {
  for (size_t i = 0; i < N_BACKENDS; i++)
    if (backends[i]->is_cpu_fallback)
      return backends[i];
  return &cp_none_backend; /* not reached: none is the fallback row */
}

const cp_backend_ops *cp_backend_default(void) {
  for (size_t i = 0; i < N_BACKENDS; i++)
    if (backends[i]->is_default_candidate && backends[i]->available())
      return backends[i];
  return cp_backend_cpu_fallback();
}

void cp_backend_config_set(cp_backend_config *c, const char *mode,
                           const void *opts, size_t size) {
  c->mode = mode;
  memcpy(c->opts, opts, size < sizeof c->opts ? size : sizeof c->opts);
}

int cp_backend_parse_mode(const cp_backend_ops *b, const char *mode,
                          int is_trace, cp_backend_config *out) {
  memset(out, 0, sizeof *out);
  out->is_trace = is_trace;
  int rc = b->parse_mode ? b->parse_mode(mode, out) : CPROTON_OK;
  out->mode = mode;
  out->parsed_by = b;
  return rc;
}

int cp_backend_same_mode(const cp_backend_ops *b, const cp_backend_config *a,
                         const cp_backend_config *c) {
  if (b->same_mode)
    return b->same_mode(a, c);
  return strcmp(a->mode ? a->mode : "", c->mode ? c->mode : "") == 0;
}
