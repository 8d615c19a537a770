/* scope_bench.c -- cost of a C-level scope enter+exit pair when the node
 * already exists (issue 2 target: < 50 ns), measured side by side with an
 * empty loop and with no active session, medians of interleaved runs; and,
 * with --growth, the cost of a *new* scope per million nodes as the tree
 * grows (issue 24.15 target: the tenth million within 2x of the first).
 * Usage: scope_bench [iterations-per-run] [runs]
 *        scope_bench --growth [steps] [flat|tree] [scopes-per-step]
 *        (10 steps of 10^6 by default) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/session.h"
#include "cproton/cproton.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* CPU time of this thread: on a loaded machine wall time also counts the
 * time other processes held the core. */
static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

/* One new node per pair: "flat" gives each scope a new name under ROOT
 * (the tree and the string table both grow); "tree" reuses 1000 inner
 * names under ever new outer scopes (the tree grows, the names do not). */
static void new_scopes(long first, long n, int flat) {
  char name[32];
  for (long i = first; i < first + n; i++) {
    if (flat) {
      snprintf(name, sizeof name, "s%ld", i);
      cproton_scope_enter(name, NULL);
      cproton_scope_exit(NULL);
      continue;
    }
    if (i % 1000 == 0) {
      if (i > first)
        cproton_scope_exit(NULL);
      snprintf(name, sizeof name, "o%ld", i / 1000);
      cproton_scope_enter(name, NULL);
    }
    snprintf(name, sizeof name, "i%ld", i % 1000);
    cproton_scope_enter(name, NULL);
    cproton_scope_exit(NULL);
  }
  if (!flat)
    cproton_scope_exit(NULL);
}

/* Prints ns per new scope for each step; exits without finalizing (a
 * profile of 10^7 nodes is not what is measured). */
static int growth(int steps, int flat, long per_step) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = "/tmp/cproton-scope-growth";
  o.backend = "none";
  int sid;
  if (cproton_session_start(&o, &sid) != CPROTON_OK) {
    fprintf(stderr, "scope_bench: %s\n", cproton_last_error());
    return 1;
  }
  printf("new scopes (%s), per new scope in each step of %ld\n"
         "  nodes after   CPU ns   wall ns   CPU vs the first step\n",
         flat ? "flat: a new name each" : "tree: 1000 names reused", per_step);
  double first = 0;
  for (int m = 0; m < steps; m++) {
    double t0 = now_ns(), c0 = cpu_ns();
    new_scopes(m * per_step, per_step, flat);
    double cpu = (cpu_ns() - c0) / (double)per_step;
    double wall = (now_ns() - t0) / (double)per_step;
    if (m == 0)
      first = cpu;
    printf("  %11ld   %6.0f  %8.0f   %.2fx\n", (m + 1) * per_step, cpu, wall,
           cpu / first);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--growth") == 0)
    return growth(argc > 2 ? atoi(argv[2]) : 10,
                  !(argc > 3 && strcmp(argv[3], "tree") == 0),
                  argc > 4 ? atol(argv[4]) : 1000000);
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
