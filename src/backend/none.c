/* backend/none.c -- the CPU-only backend: sessions record scopes, states
 * and metrics, and no GPU work. Used when no GPU backend can load. */
#include "backend/backend.h"
#include "cproton/errors.h"

static int none_available(void) { return 1; }
static int none_start(const char *mode) { return CPROTON_OK; }
static int none_flush(void) { return CPROTON_OK; }
static void none_stop(void) {}

const cp_backend_ops cp_none_backend = {
    .name = "none",
    .available = none_available,
    .start = none_start,
    .flush = none_flush,
    .stop = none_stop,
};
