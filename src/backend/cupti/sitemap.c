/* backend/cupti/sitemap.c -- the growable key -> site map (sitemap.h):
 * open addressing with linear probing and backward-shift deletion.
 * Invariant: 0 is never a key; at most 3/4 of the slots are used; the
 * slot count is a power of two no larger than the maximum.
 * Not a hot path (graph construction, record processing, the correlation
 * ring's rare spill). Called by graph.c and corr.c. */
#include <pthread.h>
#include <stdlib.h>

#include "backend/cupti/sitemap.h"
#include "core/check.h"
#include "core/error.h"

typedef struct entry {
  uint64_t key; /* 0 = empty */
  cp_sitemap_value v;
} entry;

struct cp_sitemap {
  pthread_mutex_t lock;
  size_t mask, count, max_slots;
  entry *e;
};

static size_t pow2(size_t n) {
  size_t p = 64;
  while (p < n && p < ((size_t)1 << 30))
    p <<= 1;
  return p;
}

cp_sitemap *cp_sitemap_new(size_t initial, size_t max_slots) {
  size_t n = pow2(initial), max = pow2(max_slots);
  if (n > max)
    n = max;
  cp_sitemap *m = calloc(1, sizeof *m);
  if (m)
    m->e = calloc(n, sizeof *m->e);
  if (!m || !m->e) {
    free(m);
    cp_error_set(CPROTON_ENOMEM, "out of memory for %zu graph/launch sites",
                 n);
    return NULL;
  }
  pthread_mutex_init(&m->lock, NULL);
  m->mask = n - 1;
  m->max_slots = max;
  return m;
}

void cp_sitemap_free(cp_sitemap *m) {
  if (!m)
    return;
  pthread_mutex_destroy(&m->lock);
  free(m->e);
  free(m);
}

void cp_sitemap_lock(cp_sitemap *m) { pthread_mutex_lock(&m->lock); }
void cp_sitemap_unlock(cp_sitemap *m) { pthread_mutex_unlock(&m->lock); }

static size_t hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return (size_t)k;
}

/* The slot holding `key`, or the empty slot where it would go. */
static size_t find(const cp_sitemap *m, uint64_t key) {
  size_t i = hash(key) & m->mask;
  while (m->e[i].key && m->e[i].key != key)
    i = (i + 1) & m->mask;
  return i;
}

/* Doubles the slots, re-inserting every entry. 0 when impossible. */
static int grow(cp_sitemap *m) {
  size_t n = (m->mask + 1) * 2;
  if (n > m->max_slots)
    return 0;
  entry *fresh = calloc(n, sizeof *fresh), *old = m->e;
  if (!fresh)
    return 0;
  size_t old_n = m->mask + 1;
  m->e = fresh;
  m->mask = n - 1;
  for (size_t i = 0; i < old_n; i++)
    if (old[i].key)
      m->e[find(m, old[i].key)] = old[i];
  free(old);
  return 1;
}

int cp_sitemap_put_locked(cp_sitemap *m, uint64_t key,
                          const cp_sitemap_value *v) {
  if (!key)
    return 0;
  size_t i = find(m, key);
  if (!m->e[i].key) {
    if ((m->count + 1) * 4 > (m->mask + 1) * 3) {
      if (!grow(m))
        return 0;
      i = find(m, key);
    }
    m->count++;
    m->e[i].key = key;
  }
  CP_ASSERT(((m->mask + 1) & m->mask) == 0);
  CP_ASSERT(m->count * 4 <= (m->mask + 1) * 3);
  CP_ASSERT(m->mask + 1 <= m->max_slots);
  m->e[i].v = *v;
  return 1;
}

cp_sitemap_value *cp_sitemap_find_locked(cp_sitemap *m, uint64_t key) {
  size_t i = find(m, key);
  return key && m->e[i].key ? &m->e[i].v : NULL;
}

/* Backward-shift deletion: move later members of the probe run into the
 * hole when their home slot does not lie cyclically in (hole, j]. */
static void remove_at(cp_sitemap *m, size_t hole) {
  size_t j = hole;
  for (;;) {
    j = (j + 1) & m->mask;
    if (!m->e[j].key)
      break;
    size_t home = hash(m->e[j].key) & m->mask;
    int in_range =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (in_range)
      continue;
    m->e[hole] = m->e[j];
    hole = j;
  }
  m->e[hole].key = 0;
  m->count--;
}

void cp_sitemap_remove_locked(cp_sitemap *m, uint64_t key) {
  size_t i = find(m, key);
  if (key && m->e[i].key)
    remove_at(m, i);
}

/* Removal shifts later entries back into the hole, so the slot just
 * emptied is examined again before moving on; an entry wrapped from the
 * table's start to its end may be visited twice, harmlessly (it was kept
 * the first time, and `drop` is a pure predicate). */
size_t cp_sitemap_drop_locked(cp_sitemap *m,
                              int (*drop)(const cp_sitemap_value *, void *),
                              void *arg) {
  size_t n = 0;
  for (size_t i = 0; i <= m->mask;) {
    if (m->e[i].key && drop(&m->e[i].v, arg)) {
      remove_at(m, i);
      n++;
    } else {
      i++;
    }
  }
  return n;
}

void cp_sitemap_clear_locked(cp_sitemap *m) {
  for (size_t i = 0; i <= m->mask; i++)
    m->e[i].key = 0;
  m->count = 0;
}

size_t cp_sitemap_count_locked(const cp_sitemap *m) { return m->count; }
size_t cp_sitemap_slots_locked(const cp_sitemap *m) { return m->mask + 1; }
