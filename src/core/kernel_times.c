/* core/kernel_times.c -- a ring of recent CUPTI kernel times and the
 * alignment of intra-kernel regions to them (see kernel_times.h). Written
 * from the CUPTI delivery thread, read while traces are written; one mutex.
 * Consecutive region events of a launch hit a one-entry cache, so a trace
 * scans the ring once per launch, not per event. */
#include <pthread.h>
#include <string.h>

#include "core/fnv.h"
#include "core/kernel_times.h"
#include "core/strtab.h"

typedef struct ktime {
  uint64_t name_hash, launch_ns, start_ns, end_ns;
} ktime;

static ktime ring[CP_KTIMES_SLOTS];
static uint64_t n_put;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* the last lookup: (kernel name id, launch time) -> shift, found */
static struct {
  uint32_t group;
  uint64_t launch_ns, n_put;
  int64_t shift;
  int found, valid;
} cache;


void cp_ktimes_put(const char *name, uint64_t launch_ns, uint64_t start_ns, uint64_t end_ns) {
  if (!name || !launch_ns)
    return;
  ktime k = {cp_fnv_str(name), launch_ns, start_ns, end_ns};
  pthread_mutex_lock(&lock);
  ring[n_put++ % CP_KTIMES_SLOTS] = k;
  pthread_mutex_unlock(&lock);
}

/* The latest record of `hash` launched at most CP_KTIMES_MAX_GAP_NS before
 * `launch_ns`. Caller holds the lock. */
static const ktime *find(uint64_t hash, uint64_t launch_ns) {
  const ktime *best = NULL;
  uint64_t n = n_put < CP_KTIMES_SLOTS ? n_put : CP_KTIMES_SLOTS;
  for (uint64_t i = 0; i < n; i++) {
    const ktime *k = &ring[i];
    if (k->name_hash == hash && k->launch_ns <= launch_ns && launch_ns - k->launch_ns <= CP_KTIMES_MAX_GAP_NS &&
        (!best || k->launch_ns > best->launch_ns))
      best = k;
  }
  return best;
}

int64_t cp_ktimes_shift(uint32_t kernel_name, uint64_t launch_ns) {
  if (!launch_ns)
    return 0;
  pthread_mutex_lock(&lock);
  if (!cache.valid || cache.group != kernel_name || cache.launch_ns != launch_ns || cache.n_put != n_put) {
    const char *name = cp_strtab_str(kernel_name);
    const ktime *k = name ? find(cp_fnv_str(name), launch_ns) : NULL;
    cache.group = kernel_name;
    cache.launch_ns = launch_ns;
    cache.n_put = n_put;
    cache.found = k != NULL;
    cache.shift = k ? (int64_t)(k->start_ns - launch_ns) : 0;
    cache.valid = 1;
  }
  int64_t shift = cache.found ? cache.shift : 0;
  pthread_mutex_unlock(&lock);
  return shift;
}
