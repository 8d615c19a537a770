/* backend/cupti/corr.c -- the lock-free correlation ring (see corr.h for
 * the layout and the publication protocol).
 * Invariant: a slot's id is either 0 (being written or empty) or the id
 * whose site the slot holds completely.
 * Hot path: cp_corr_put runs inside every driver-API launch callback.
 * Called by backend/cupti/callbacks.c (put) and records.c (get). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/corr.h"
#include "core/error.h"

typedef struct slot {
  _Atomic uint32_t id;
  /* set once a record found the entry: overwriting it later loses nothing
   * (a graph launch's later kernels may still want it, and are counted as
   * unattributed if they come too late), so it is no collision */
  _Atomic uint8_t read;
  cp_launch_site site;
} slot;

struct cp_corr {
  size_t mask;
  slot *slots;
};

cp_corr *cp_corr_new(size_t capacity) {
  size_t n = 64;
  while (n < capacity && n < ((size_t)1 << 30))
    n <<= 1;
  cp_corr *t = calloc(1, sizeof *t);
  if (t)
    t->slots = calloc(n, sizeof *t->slots);
  if (!t || !t->slots) {
    free(t);
    cp_error_set(CPROTON_ENOMEM, "out of memory for %zu correlation slots", n);
    return NULL;
  }
  t->mask = n - 1;
  return t;
}

void cp_corr_free(cp_corr *t) {
  if (t)
    free(t->slots);
  free(t);
}

void cp_corr_clear(cp_corr *t) {
  for (size_t i = 0; i <= t->mask; i++)
    atomic_store_explicit(&t->slots[i].id, 0, memory_order_relaxed);
}

size_t cp_corr_capacity(const cp_corr *t) { return t->mask + 1; }

int cp_corr_put(cp_corr *t, uint32_t id, const cp_launch_site *site) {
  slot *s = &t->slots[id & t->mask];
  uint32_t old = atomic_exchange_explicit(&s->id, 0, memory_order_relaxed);
  int was_read = atomic_load_explicit(&s->read, memory_order_relaxed);
  atomic_store_explicit(&s->read, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  s->site = *site;
  atomic_store_explicit(&s->id, id, memory_order_release);
  return old != 0 && old != id && !was_read;
}

int cp_corr_get(const cp_corr *t, uint32_t id, cp_launch_site *out) {
  if (id == 0)
    return 0;
  slot *s = &t->slots[id & t->mask];
  if (atomic_load_explicit(&s->id, memory_order_acquire) != id)
    return 0;
  *out = s->site;
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->id, memory_order_relaxed) != id)
    return 0;
  atomic_store_explicit(&s->read, 1, memory_order_relaxed);
  return 1;
}
