/* cupti_pm_attr_race.c -- the PM-sampling mode's meeting point
 * (backend/cupti/pm_attr.c, issue 27) under its real threading: kernel
 * records from one thread (CUPTI's buffer thread), samples and settlement
 * from another (the decoder thread), as a plain program (no Criterion:
 * its forked workers cannot start under ThreadSanitizer). `make tsan` runs
 * it with halt_on_error, so a data race fails it; every build checks that
 * each kernel was settled exactly once and that every value is the one its
 * samples give. Exit status 0 = pass. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/cupti/pm_attr.h"

enum { KERNELS = 20000, SETTLE_EVERY = 16 };

static atomic_long settled, wrong;

/* Kernel k runs [k*1000+100, k*1000+900) and sample k covers
 * [k*1000, k*1000+1000) with value k % 100: each kernel's mean is its own
 * sample's value. */
static int deliver(const cp_launch_site *site, const char *kernel,
                   const char *metric, cp_value v) {
  (void)site;
  long k = 0;
  sscanf(kernel, "k%ld", &k);
  if (!strcmp(metric, "pm_sampled_ns"))
    atomic_fetch_add(&settled, 1), atomic_fetch_add(&wrong, v.u.i != 800);
  if (!strcmp(metric, "a%*ns"))
    atomic_fetch_add(&wrong, fabs(v.u.d / 800.0 - (double)(k % 100)) > 1e-9);
  return 0;
}

static void *records(void *arg) {
  (void)arg;
  cp_launch_site site = {0};
  char name[32];
  for (long k = 0; k < KERNELS; k++) {
    snprintf(name, sizeof name, "k%ld", k);
    cp_pm_attr_kernel(name, &site, (uint64_t)k * 1000 + 100,
                      (uint64_t)k * 1000 + 900, 0);
  }
  return NULL;
}

static void *decoder(void *arg) {
  (void)arg;
  for (long k = 0; k < KERNELS; k++) {
    double v = (double)(k % 100);
    cp_pm_attr_sample(0, (uint64_t)k * 1000, (uint64_t)k * 1000 + 1000, &v);
    if (k % SETTLE_EVERY == 0)
      cp_pm_attr_settle(0);
  }
  return NULL;
}

int main(void) {
  const char *names[] = {"a%"};
  cp_pm_attr_begin(1, names, 1000, deliver);
  cp_pm_attr_device_on(0);
  pthread_t r, d;
  pthread_create(&r, NULL, records, NULL);
  pthread_create(&d, NULL, decoder, NULL);
  pthread_join(r, NULL);
  pthread_join(d, NULL);
  cp_pm_attr_settle(1);
  cp_pm_attr_stats st;
  cp_pm_attr_stats_get(&st);
  cp_pm_attr_end();
  long n = atomic_load(&settled), bad = atomic_load(&wrong);
  /* a record that came after its samples were kept is still valued; the
   * first sample (k = 0) is not irregular: it spans one interval */
  if (n != KERNELS || bad || st.kernels != KERNELS || st.errors) {
    fprintf(stderr, "cupti_pm_attr_race: settled %ld of %d, %ld wrong, "
            "stats kernels %llu errors %llu\n", n, KERNELS, bad,
            (unsigned long long)st.kernels, (unsigned long long)st.errors);
    return 1;
  }
  return 0;
}
