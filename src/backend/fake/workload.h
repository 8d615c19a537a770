/* backend/fake/workload.h -- a synthetic training step for the fake backend,
 * and the process's resident memory: the long-run memory checks
 * (tests/unit/core_phase_test.c, bench/soak_bench.c) share them. Test
 * support only; nothing in the library uses this header. */
#ifndef CP_BACKEND_FAKE_WORKLOAD_H
#define CP_BACKEND_FAKE_WORKLOAD_H

#include <stdio.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "cproton/cproton.h"

/* Step `i`: "step" -> one of four layers -> eight kernels on two streams,
 * and a "tokens" metric. The same few names every time, as a real run. */
static inline void cp_fake_workload_step(long i) {
  static const char *const layers[] = {"attn", "mlp", "norm", "embed"};
  cproton_scope_enter("step", NULL);
  cproton_scope_enter(layers[i % 4], NULL);
  for (int k = 0; k < 8; k++) {
    char kernel[16];
    snprintf(kernel, sizeof kernel, "kernel_%d", k);
    cp_fake_launch(kernel, 100 + (uint64_t)k, 0, (uint32_t)(k % 2));
  }
  cproton_metric_add_int(0, "tokens", 512);
  cproton_scope_exit(layers[i % 4]);
  cproton_scope_exit("step");
}

/* Resident set size in KiB (0 when /proc is unavailable). */
static inline long cp_fake_workload_rss_kib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2)
    resident = 0;
  if (f)
    fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#endif
