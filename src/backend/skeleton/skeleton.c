/* backend/skeleton/skeleton.c -- the smallest complete backend: the
 * template for a new one, and the proof that adding a backend is one
 * folder, one registry row (backend/registry.c) and one CMake line. It
 * measures nothing (no GPU work, no records), so its life cycle can be
 * checked on the CPU (tests/unit/backend_conformance_test.c). Built only
 * with CPROTON_TEST_BACKENDS, like the fake backend. Not a hot path. */
#include <stddef.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"

/* The backend's own mode table: its modes and their meaning live here,
 * nowhere else. */
static const struct {
  const char *name;
  int counts; /* what a mode would switch on in a real backend */
} modes[] = {{"", 0}, {"default", 0}, {"count", 1}};
#define N_MODES (sizeof modes / sizeof *modes)

/* The parsed mode, in the session's cp_backend_config. */
typedef struct skeleton_options {
  int counts;
} skeleton_options;
_Static_assert(sizeof(skeleton_options) <= CP_BACKEND_OPTS_BYTES,
               "skeleton options fit a backend configuration");

/* The instance: all of the backend's state. */
static struct {
  int running;
  skeleton_options options; /* of the session that started it */
} self;

static const skeleton_options *options_of(const cp_backend_config *c) {
  return CP_BACKEND_OPTS(skeleton_options, c);
}

/* Parsed once per session, by the session layer. */
static int skeleton_parse_mode(const char *mode, cp_backend_config *out) {
  const char *m = mode ? mode : "";
  out->mode = mode;
  for (size_t i = 0; i < N_MODES; i++)
    if (strcmp(modes[i].name, m) == 0) {
      skeleton_options o = {.counts = modes[i].counts};
      cp_backend_config_set(out, mode, &o, sizeof o);
      return CPROTON_OK;
    }
  return cp_error_set(CPROTON_EINVAL,
                      "skeleton backend: unknown mode '%s' (valid: default, count)",
                      m);
}

/* Cheap and silent: there is nothing to load. */
static int skeleton_available(void) { return 1; }
static void skeleton_probe(cp_backend_probe *out) {
  *out = (cp_backend_probe){.runs = 1};
}

static int skeleton_start(const cp_backend_config *config) {
  self.options = *options_of(config);
  self.running = 1;
  return CPROTON_OK;
}

static int skeleton_flush(void) {
  return self.running ? CPROTON_OK
                      : cp_error_set(CPROTON_EINVAL, "skeleton backend: flush "
                                     "while not started");
}

static void skeleton_stop(void) { self.running = 0; }

/* Two sessions can share the backend when their modes mean the same. */
static int skeleton_same_mode(const cp_backend_config *a,
                              const cp_backend_config *b) {
  return options_of(a)->counts == options_of(b)->counts;
}

const cp_backend_ops cp_skeleton_backend = {
    .name = "skeleton",
    .available = skeleton_available,
    .probe = skeleton_probe,
    .parse_mode = skeleton_parse_mode,
    .start = skeleton_start,
    .flush = skeleton_flush,
    .stop = skeleton_stop,
    .same_mode = skeleton_same_mode,
    .times_kernels = 1,
    .flush_is_complete = 1, /* nothing is in flight */
};
