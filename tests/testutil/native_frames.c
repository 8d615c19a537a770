/* tests/testutil/native_frames.c -- a small "application" with known call
 * paths for the native-stack tests (tests/unit/core_native_test.c): the
 * exported entry calls outer -> middle -> inner, which launches through a
 * function pointer (the fake backend's cp_fake_launch). Built -O0 -g -fno-inline as
 * libnative_frames.so and again, stripped of every symbol and debug
 * section, as libnative_frames_stripped.so (tests/CMakeLists.txt). The call
 * sites' lines are recorded so the test can check file:line. Test code. */
#include <stdint.h>

/* cp_fake_launch's signature: the test passes it itself, so the frame
 * above the backend's entry is inner's. */
typedef int (*launch_fn)(const char *kernel, uint64_t duration_ns,
                         uint32_t device, uint32_t stream);

static int call_lines[3]; /* outer->middle, middle->inner, inner->launch */

__attribute__((noinline)) static int inner(launch_fn launch) {
  int rc;
  call_lines[2] = __LINE__, rc = launch("k_inner", 1000, 0, 0);
  return rc;
}

__attribute__((noinline)) static int middle(launch_fn launch) {
  int rc;
  call_lines[1] = __LINE__, rc = inner(launch);
  return rc;
}

__attribute__((noinline)) static int outer(launch_fn launch) {
  int rc;
  call_lines[0] = __LINE__, rc = middle(launch);
  return rc;
}

/* Launches `reps` times from the same call path; returns the first error. */
__attribute__((visibility("default"))) int native_frames_run(launch_fn launch,
                                                             int reps) {
  int rc = 0;
  for (int i = 0; i < reps && !rc; i++)
    rc = outer(launch);
  return rc;
}

/* Two launches from one source line: two call sites, two frames. */
__attribute__((visibility("default"))) int native_frames_twice(launch_fn launch) {
  return launch("k_twice", 1000, 0, 0) | launch("k_twice", 1000, 0, 0);
}

/* The lines of the three calls above, outermost first. */
__attribute__((visibility("default"))) void native_frames_lines(int out[3]) {
  for (int i = 0; i < 3; i++)
    out[i] = call_lines[i];
}
