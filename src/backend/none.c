/* backend/none.c -- the CPU-only backend: sessions record scopes, states
 * and metrics, and no GPU work. Used when no GPU backend can load. */
#include "backend/backend.h"
#include "cproton/errors.h"

static int none_available(void) { return 1; }
static int none_start(const char *mode) { return CPROTON_OK; }

/* A CPU-only session stands in for the default GPU backend (it is what a
 * session without a GPU gets), so it accepts exactly that backend's modes:
 * "pcsampling:interval=abc" is refused on every machine. */
static int none_check_mode(const char *mode) {
  const cp_backend_ops *gpu = cp_backend_default_candidate();
  return gpu && gpu->check_mode ? gpu->check_mode(mode) : CPROTON_OK;
}
static int none_flush(void) { return CPROTON_OK; }
static void none_stop(void) {}

const cp_backend_ops cp_none_backend = {
    .name = "none",
    .available = none_available,
    .start = none_start,
    .flush = none_flush,
    .stop = none_stop,
    .check_mode = none_check_mode,
    .times_kernels = 1,
    .flush_is_complete = 1, /* CPU scopes and metrics land as they happen */
};
