/* native_race.c -- threads racing the table of known native stacks
 * (core/native.c): four threads launch on the fake backend from the same
 * eight call sites (distinct recursion depths, so distinct stacks) in
 * different orders, with context "native", while a fifth writes the live
 * profile (cproton_session_data: symbolization racing new stacks). A plain
 * program (`make tsan` runs it under ThreadSanitizer with halt_on_error);
 * every build checks afterwards that each site became exactly one new stack
 * and every other launch a table hit, that no launch lost its frames, and
 * that every kernel was counted. Exit status 0 = pass. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fake/fake.h"
#include "core/native.h"
#include "cproton/cproton.h"

enum { N_THREADS = 4, N_SITES = 8, N_ROUNDS = 400 };

static _Atomic int stop;
static _Atomic int errors;

/* Launches from a stack `depth` frames deeper than the caller's. */
__attribute__((noinline)) static int site(int depth) {
  if (depth > 0) {
    int rc = site(depth - 1);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return rc;
  }
  return cp_fake_launch("k", 100, 0, 0);
}

static void *launcher(void *arg) {
  long t = (long)arg;
  for (int r = 0; r < N_ROUNDS; r++)
    for (int s = 0; s < N_SITES; s++)
      if (site((int)((s * (2 * t + 1) + r) % N_SITES)) != CPROTON_OK)
        errors++;
  return NULL;
}

static void *writer(void *arg) {
  int sid = *(int *)arg;
  while (!stop) {
    char *buf;
    size_t n;
    if (cproton_session_data(sid, -1, "hatchet", &buf, &n) == CPROTON_OK)
      free(buf);
  }
  return NULL;
}

int main(int argc, char **argv) {
  char name[4096];
  snprintf(name, sizeof name, "%s/native_race", argc > 1 ? argv[1] : ".");
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = name;
  o.backend = "fake";
  o.context = "native";
  int sid;
  if (cproton_session_start(&o, &sid) != CPROTON_OK) {
    fprintf(stderr, "native_race: %s\n", cproton_last_error());
    return 1;
  }
#ifdef __SANITIZE_THREAD__
  /* libunwind (uninstrumented) frees its per-thread cache in a
   * thread-specific-data destructor that locks a mutex after
   * ThreadSanitizer has torn the exiting thread down: a crash inside TSan.
   * The table this test races is the same with either unwinder. */
  cp_native_set_unwinder("backtrace");
#endif
  cp_native_stats before, after;
  cp_native_get_stats(&before);
  pthread_t th[N_THREADS], w;
  pthread_create(&w, NULL, writer, &sid);
  for (long t = 0; t < N_THREADS; t++)
    pthread_create(&th[t], NULL, launcher, (void *)t);
  for (int t = 0; t < N_THREADS; t++)
    pthread_join(th[t], NULL);
  stop = 1;
  pthread_join(w, NULL);
  cp_native_get_stats(&after);
  int fail = cproton_session_finalize(sid, NULL) != CPROTON_OK;
  uint64_t launches = (uint64_t)N_THREADS * N_SITES * N_ROUNDS;
  uint64_t misses = after.misses - before.misses;
  uint64_t hits = after.hits - before.hits;
  /* return addresses are code addresses: a site is one stack whichever
   * thread launches from it */
  if (misses != N_SITES || hits + misses != launches ||
      after.full != before.full || errors) {
    fprintf(stderr, "native_race: %llu new stacks (want %d), %llu hits, "
            "%llu launches without frames, %d errors\n",
            (unsigned long long)misses, N_SITES,
            (unsigned long long)hits,
            (unsigned long long)(after.full - before.full), (int)errors);
    fail = 1;
  }
  printf("%s native_race: %llu launches, %llu new stacks\n",
         fail ? "FAIL" : "PASS", (unsigned long long)launches,
         (unsigned long long)misses);
  return fail;
}
