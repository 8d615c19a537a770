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

static int running;

static int find_mode(const char *mode, size_t *index) {
  const char *m = mode ? mode : "";
  for (size_t i = 0; i < N_MODES; i++)
    if (strcmp(modes[i].name, m) == 0) {
      *index = i;
      return CPROTON_OK;
    }
  return cp_error_set(CPROTON_EINVAL,
                      "skeleton backend: unknown mode '%s' (valid: default, count)",
                      m);
}

static int skeleton_check_mode(const char *mode) {
  size_t i;
  return find_mode(mode, &i);
}

/* Cheap and silent: there is nothing to load. */
static int skeleton_available(void) { return 1; }

static int skeleton_start(const char *mode) {
  size_t i;
  int rc = find_mode(mode, &i);
  if (rc)
    return rc;
  running = 1;
  return CPROTON_OK;
}

static int skeleton_flush(void) {
  return running ? CPROTON_OK
                 : cp_error_set(CPROTON_EINVAL, "skeleton backend: flush "
                                "while not started");
}

static void skeleton_stop(void) { running = 0; }

/* Two sessions can share the backend when their modes mean the same. */
static int skeleton_mode_compatible(const char *a, const char *b) {
  size_t i, j;
  if (find_mode(a, &i) || find_mode(b, &j))
    return 0;
  return modes[i].counts == modes[j].counts;
}

const cp_backend_ops cp_skeleton_backend = {
    .name = "skeleton",
    .available = skeleton_available,
    .start = skeleton_start,
    .flush = skeleton_flush,
    .stop = skeleton_stop,
    .mode_compatible = skeleton_mode_compatible,
    .check_mode = skeleton_check_mode,
    .times_kernels = 1,
    .flush_is_complete = 1, /* nothing is in flight */
};
