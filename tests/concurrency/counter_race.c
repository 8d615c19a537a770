/* counter_race.c -- hardware-counter samples (cp_session_deliver_counter,
 * issue 27) from decoder-like threads while trace and tree sessions start
 * and finalize, as a plain program (no Criterion: its forked workers
 * cannot start under ThreadSanitizer). `make tsan` runs it under TSan with
 * halt_on_error, so any data race fails the test; every build checks that
 * no delivery failed and that the last trace holds the samples delivered
 * while it was the only session. Exit status 0 = pass. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/session.h"
#include "cproton/cproton.h"

enum { N_SAMPLERS = 3, ROUNDS = 30, LAST_SAMPLES = 500 };

static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, int rc) {
  pthread_mutex_lock(&fail_lock);
  failures++;
  fprintf(stderr, "counter_race: %s: %s (%s)\n", what, cproton_error_name(rc),
          cproton_last_error());
  pthread_mutex_unlock(&fail_lock);
}

typedef struct sampler {
  uint32_t device;
  int stop;
} sampler;

/* Samples back to back on its device, as a PM-sampling decoder would. */
static void *sample_loop(void *arg) {
  sampler *s = arg;
  for (uint64_t k = 0; !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE); k++) {
    int rc = cp_session_deliver_counter(s->device, k * 1000, k * 1000 + 1000,
                                        "sm_throughput%", (double)(k % 100));
    if (rc)
      fail("deliver_counter", rc);
  }
  return NULL;
}

static int start(const char *dir, const char *name, const char *data) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = path;
  o.backend = "none";
  o.data = data;
  int sid, rc = cproton_session_start(&o, &sid);
  if (rc)
    fail("session_start", rc);
  return rc ? -1 : sid;
}

/* Counter events ("ph":"C") in a Chrome trace file. */
static long count_counters(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  long n = 0;
  char line[4096];
  while (fgets(line, sizeof line, f))
    n += strstr(line, "\"ph\":\"C\"") != NULL;
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  sampler s[N_SAMPLERS];
  pthread_t th[N_SAMPLERS];
  for (int i = 0; i < N_SAMPLERS; i++) {
    s[i] = (sampler){.device = (uint32_t)i};
    pthread_create(&th[i], NULL, sample_loop, &s[i]);
  }
  for (int r = 0; r < ROUNDS; r++) { /* slots reused under the samplers */
    int trace = start(dir, "counter_race_trace", "trace");
    int tree = start(dir, "counter_race_tree", "tree");
    if (trace >= 0 && cproton_session_finalize(trace, NULL))
      fail("finalize trace", -1);
    if (tree >= 0 && cproton_session_finalize(tree, NULL))
      fail("finalize tree", -1);
  }
  for (int i = 0; i < N_SAMPLERS; i++) {
    __atomic_store_n(&s[i].stop, 1, __ATOMIC_RELEASE);
    pthread_join(th[i], NULL);
  }
  int last = start(dir, "counter_race_last", "trace");
  for (uint64_t k = 0; k < LAST_SAMPLES; k++)
    if (cp_session_deliver_counter(0, k, k + 1, "dram_throughput%", 1.0))
      fail("deliver_counter (last)", -1);
  if (last >= 0 && cproton_session_finalize(last, NULL))
    fail("finalize last", -1);
  char path[600];
  snprintf(path, sizeof path, "%s/counter_race_last.chrome_trace", dir);
  long n = count_counters(path);
  if (n != LAST_SAMPLES) {
    fprintf(stderr, "counter_race: %ld counter events, want %d\n", n,
            LAST_SAMPLES);
    failures++;
  }
  cp_session_reset_all();
  printf("counter_race: %s\n", failures ? "FAIL" : "ok");
  return failures != 0;
}
