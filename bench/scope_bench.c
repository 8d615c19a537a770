/* scope_bench.c -- cost of a C-level scope enter+exit pair when the node
 * already exists (issue 2 target: < 50 ns), measured side by side with an
 * empty loop and with no active session, medians of interleaved runs.
 * Usage: scope_bench [iterations-per-run] [runs] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/session.h"
#include "cproton/cproton.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile int sink;

static double run_empty(long n) {
  double t0 = now_ns();
  for (long i = 0; i < n; i++)
    sink = (int)i;
  return (now_ns() - t0) / n;
}

static double run_scopes(long n) {
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    cproton_scope_enter("step", NULL);
    cproton_scope_exit(NULL);
  }
  return (now_ns() - t0) / n;
}

static double run_nested(long n) {
  double t0 = now_ns();
  cproton_scope_enter("outer", NULL);
  for (long i = 0; i < n; i++) {
    cproton_scope_enter("inner", NULL);
    cproton_scope_exit("inner");
  }
  cproton_scope_exit("outer");
  return (now_ns() - t0) / n;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  int runs = argc > 2 ? atoi(argv[2]) : 11;
  double empty[64], idle[64], active[64], nested[64];
  if (runs > 64)
    runs = 64;
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = "/tmp/cproton-scope-bench";
  o.backend = "none";
  int sid;
  run_scopes(1000); /* create the nodes */
  for (int r = 0; r < runs; r++) { /* interleaved */
    empty[r] = run_empty(n);
    idle[r] = run_scopes(n);
    if (cproton_session_start(&o, &sid) != CPROTON_OK) {
      fprintf(stderr, "scope_bench: %s\n", cproton_last_error());
      return 1;
    }
    active[r] = run_scopes(n);
    nested[r] = run_nested(n);
    cproton_session_finalize(sid, NULL);
  }
  double e = median(empty, runs);
  printf("scope enter+exit, %ld pairs x %d interleaved runs (median ns/pair)\n",
         n, runs);
  printf("  empty loop                 %7.1f\n", e);
  printf("  no active session          %7.1f\n", median(idle, runs) - e);
  printf("  one active session         %7.1f\n", median(active, runs) - e);
  printf("  nested, one session        %7.1f\n", median(nested, runs) - e);
  printf("  target                       50.0\n");
  return 0;
}
