/* soak_bench.c -- the long-run memory check of periodic flushing: a trace
 * session (the memory-hungry kind) on the fake backend, a training-like
 * step of nested scopes and eight kernels, advance_phase every N launches,
 * for a wall-clock duration. Prints RSS once a minute and fails (exit 1)
 * when the last RSS exceeds the one after the first minute by more than
 * 10%. Part files go to a temporary folder and are deleted as they come.
 * tests/unit/core_phase_test.c runs the same workload for a few seconds.
 * Usage: soak_bench [seconds=600] [launches-per-phase=2000]
 *                   [data=trace|tree] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "backend/fake/workload.h"
#include "cproton/cproton.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 600;
  long per_phase = argc > 2 ? atol(argv[2]) : 2000;
  const char *data = argc > 3 ? argv[3] : "trace";
  char dir[] = "/tmp/cproton-soak-XXXXXX", name[64], part[128];
  if (!mkdtemp(dir) || per_phase < 8)
    return 2;
  snprintf(name, sizeof name, "%s/soak", dir);
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = name;
  o.backend = "fake";
  o.data = data;
  o.mode = strcmp(data, "trace") == 0 ? "periodic_flushing:format=chrome_trace"
                                      : "periodic_flushing";
  int sid;
  if (cproton_session_start(&o, &sid) != CPROTON_OK) {
    fprintf(stderr, "soak_bench: %s\n", cproton_last_error());
    return 2;
  }
  const char *ext = strcmp(data, "trace") == 0 ? "chrome_trace" : "hatchet";
  double t0 = now_s(), next_report = 60;
  long first = 0, last = 0, launches = 0;
  uint32_t phase = 0;
  printf("soak_bench: %s, advance every %ld launches, %.0f s\n", data,
         per_phase, seconds);
  while (now_s() - t0 < seconds) {
    for (long i = 0; i < per_phase / 8; i++)
      cp_fake_workload_step(launches / 8 + i);
    launches += per_phase / 8 * 8;
    if (cproton_session_advance_phase(sid, &phase) != CPROTON_OK) {
      fprintf(stderr, "soak_bench: %s\n", cproton_last_error());
      return 2;
    }
    for (uint32_t k = phase >= 3 ? phase - 3 : 0; k + 1 < phase; k++) {
      snprintf(part, sizeof part, "%s.part_%u.%s", name, k, ext);
      unlink(part);
    }
    double t = now_s() - t0;
    if (t >= next_report || t >= seconds) {
      last = cp_fake_workload_rss_kib();
      first = first ? first : last;
      printf("  %6.0f s  %10ld launches  phase %6u  RSS %ld KiB\n", t,
             launches, phase, last);
      fflush(stdout);
      next_report += 60;
    }
  }
  cproton_session_finalize(sid, NULL);
  snprintf(part, sizeof part, "rm -rf '%s'", dir);
  if (system(part) != 0)
    fprintf(stderr, "soak_bench: could not remove %s\n", dir);
  int flat = last <= first + first / 10;
  printf("soak_bench: RSS %ld KiB after the first report, %ld KiB at the end: "
         "%s\n", first, last, flat ? "flat (within 10%)" : "GREW");
  return flat ? 0 : 1;
}
