/* backend/none.c -- the CPU-only backend: sessions record scopes, states
 * and metrics, and no GPU work. Used when no GPU backend can load. */
#include "backend/backend.h"
#include "cproton/errors.h"

static int none_available(void) { return 1; }
static int none_start(const cp_backend_config *config) {
  (void)config;
  return CPROTON_OK;
}

/* Nothing to find: a session on this backend runs anywhere. */
static void none_probe(cp_backend_probe *out) {
  *out = (cp_backend_probe){.runs = 1};
}

/* A CPU-only session stands in for the default GPU backend (it is what a
 * session without a GPU gets), so it accepts exactly that backend's modes:
 * "pcsampling:interval=abc" is refused on every machine. Two sessions
 * compare their strings (no same_mode). */
static int none_parse_mode(const char *mode, cp_backend_config *out) {
  const cp_backend_ops *gpu = cp_backend_default_candidate();
  int rc = gpu ? cp_backend_parse_mode(gpu, mode, out->is_trace, out) : CPROTON_OK;
  out->mode = mode;
  return rc;
}
/* The mode was parsed by the default GPU backend: ask it too. */
static int none_wants_loaded_cubins(const cp_backend_config *config) {
  const cp_backend_ops *gpu = cp_backend_default_candidate();
  return gpu && gpu->wants_loaded_cubins && gpu->wants_loaded_cubins(config);
}

static int none_flush(void) { return CPROTON_OK; }
static void none_stop(void) {}

const cp_backend_ops cp_none_backend = {
    .name = "none",
    .available = none_available,
    .start = none_start,
    .flush = none_flush,
    .stop = none_stop,
    .probe = none_probe,
    .parse_mode = none_parse_mode,
    .wants_loaded_cubins = none_wants_loaded_cubins,
    .is_cpu_fallback = 1,
    .times_kernels = 1,
    .flush_is_complete = 1, /* CPU scopes and metrics land as they happen */
};
