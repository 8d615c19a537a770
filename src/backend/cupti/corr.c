/* backend/cupti/corr.c -- the lock-free correlation ring and its spill map
 * (see corr.h for the layout, the publication protocol and the spill).
 * Invariant: a slot's id is either 0 (being written or empty) or the id
 * whose site the slot holds completely; an entry a record still needs is
 * in the ring or the spill map, or was counted as a collision.
 * Hot path: cp_corr_put runs inside every driver-API launch callback.
 * Called by backend/cupti/callbacks.c (put) and records.c (get). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/corr.h"
#include "backend/cupti/sitemap.h"
#include "core/error.h"

enum { F_READ = 4 }; /* beside CP_CORR_CAPTURED, CP_CORR_GRAPH */

typedef struct slot {
  _Atomic uint32_t id;
  /* CP_CORR_* flags, set before the id is published; F_READ once a
   * record found the entry */
  _Atomic uint8_t flags;
  cp_launch_site site;
} slot;

struct cp_corr {
  size_t mask;
  slot *slots;
  cp_sitemap *spill;
  atomic_size_t n_spill;    /* entries in `spill`: lookups skip it at 0 */
  atomic_ullong spilled;    /* entries moved to `spill` */
  atomic_ullong expired;    /* unread entries dropped from a full spill */
  uint32_t seq;             /* spills, numbered: an entry's gen (locked) */
  uint32_t graph_read;      /* read graph entries in `spill` (locked) */
};

cp_corr *cp_corr_new(size_t capacity) {
  size_t n = 64;
  while (n < capacity && n < ((size_t)1 << 30))
    n <<= 1;
  cp_corr *t = calloc(1, sizeof *t);
  if (t)
    t->slots = calloc(n, sizeof *t->slots);
  if (t && t->slots)
    t->spill = cp_sitemap_new(64, CP_CORR_SPILL_SLOTS);
  if (!t || !t->slots || !t->spill) {
    if (t)
      free(t->slots);
    free(t);
    cp_error_set(CPROTON_ENOMEM, "out of memory for %zu correlation slots", n);
    return NULL;
  }
  t->mask = n - 1;
  return t;
}

void cp_corr_free(cp_corr *t) {
  if (t) {
    free(t->slots);
    cp_sitemap_free(t->spill);
  }
  free(t);
}

void cp_corr_clear(cp_corr *t) {
  for (size_t i = 0; i <= t->mask; i++)
    atomic_store_explicit(&t->slots[i].id, 0, memory_order_relaxed);
  cp_sitemap_lock(t->spill);
  cp_sitemap_clear_locked(t->spill);
  t->graph_read = 0;
  atomic_store(&t->n_spill, 0);
  cp_sitemap_unlock(t->spill);
}

size_t cp_corr_capacity(const cp_corr *t) { return t->mask + 1; }

uint64_t cp_corr_spilled(cp_corr *t) { return atomic_load(&t->spilled); }
uint64_t cp_corr_expired(cp_corr *t) { return atomic_load(&t->expired); }
size_t cp_corr_spill_count(cp_corr *t) { return atomic_load(&t->n_spill); }

/* Read graph entries spilled more than CP_CORR_SPILL_GRAPHS spills ago. */
static int old_read_graph(const cp_sitemap_value *v, void *arg) {
  uint32_t newest = *(const uint32_t *)arg;
  return (v->flags & F_READ) && (v->flags & CP_CORR_GRAPH) &&
         newest - v->gen >= CP_CORR_SPILL_GRAPHS;
}

/* Entries spilled before `arg`'s sequence number (the older half). */
static int older_than(const cp_sitemap_value *v, void *arg) {
  return (int32_t)(*(const uint32_t *)arg - v->gen) > 0;
}

/* Bounds the read graph entries kept: amortised, one sweep per
 * CP_CORR_SPILL_GRAPHS / 2 of them. Caller holds the lock. */
static void trim_locked(cp_corr *t) {
  if (t->graph_read < CP_CORR_SPILL_GRAPHS + CP_CORR_SPILL_GRAPHS / 2)
    return;
  size_t n = cp_sitemap_drop_locked(t->spill, old_read_graph, &t->seq);
  t->graph_read -= (uint32_t)n;
  atomic_fetch_sub(&t->n_spill, n);
}

/* A full spill map gives up its older half: entries whose record has not
 * come after that many later spills (a launch that failed, or a lookup
 * that raced the spill and found the entry in the ring) -- counted; a
 * record that still comes is unattributed (counted). */
static void expire_locked(cp_corr *t) {
  /* t->seq already counts the entry being spilled */
  uint32_t cut =
      t->seq - 1 - (uint32_t)(cp_sitemap_count_locked(t->spill) / 2);
  size_t n = cp_sitemap_drop_locked(t->spill, older_than, &cut);
  atomic_fetch_sub(&t->n_spill, n);
  atomic_fetch_add(&t->expired, n);
  t->graph_read = 0; /* recounted lazily: only bounds the next trim */
}

/* Moves slot `s`'s entry (id `old`, `flags`) to the spill map. */
static int spill(cp_corr *t, uint32_t old, uint8_t flags, const slot *s) {
  cp_sitemap_value v = {.site = s->site, .flags = flags};
  cp_sitemap_lock(t->spill);
  v.gen = t->seq++;
  size_t before = cp_sitemap_count_locked(t->spill);
  int ok = cp_sitemap_put_locked(t->spill, old, &v);
  if (!ok) {
    expire_locked(t);
    before = cp_sitemap_count_locked(t->spill);
    ok = cp_sitemap_put_locked(t->spill, old, &v);
  }
  if (ok && cp_sitemap_count_locked(t->spill) > before) {
    atomic_fetch_add(&t->n_spill, 1);
    if ((flags & CP_CORR_GRAPH) && (flags & F_READ))
      t->graph_read++;
    trim_locked(t);
  }
  cp_sitemap_unlock(t->spill);
  if (ok)
    atomic_fetch_add_explicit(&t->spilled, 1, memory_order_relaxed);
  return ok ? CP_CORR_SPILLED : CP_CORR_COLLISION;
}

/* Whether a record may still need the entry: not a captured launch, and
 * either unread or a graph launch's. */
static int needed(uint8_t flags) {
  return !(flags & CP_CORR_CAPTURED) &&
         (!(flags & F_READ) || (flags & CP_CORR_GRAPH));
}

int cp_corr_put(cp_corr *t, uint32_t id, const cp_launch_site *site,
                unsigned flags) {
  slot *s = &t->slots[id & t->mask];
  int rc = CP_CORR_STORED;
  uint32_t old = atomic_load_explicit(&s->id, memory_order_acquire);
  uint8_t old_flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
  /* spilled before the slot is cleared: a lookup finds it in one place or
   * the other */
  if (old != 0 && old != id && needed(old_flags))
    rc = spill(t, old, old_flags, s);
  atomic_store_explicit(&s->id, 0, memory_order_relaxed);
  atomic_store_explicit(&s->flags, (uint8_t)flags, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  s->site = *site;
  atomic_store_explicit(&s->id, id, memory_order_release);
  return rc;
}

/* A lookup in the spill map: a single launch's entry is dropped once read,
 * a graph launch's kept (its other kernels read it too); `peek` changes
 * nothing. */
static int spill_get(cp_corr *t, uint32_t id, cp_launch_site *out, int peek) {
  cp_sitemap_lock(t->spill);
  cp_sitemap_value *v = cp_sitemap_find_locked(t->spill, id);
  int found = v != NULL;
  if (found)
    *out = v->site;
  if (found && !peek && !(v->flags & CP_CORR_GRAPH)) {
    cp_sitemap_remove_locked(t->spill, id);
    atomic_fetch_sub(&t->n_spill, 1);
  } else if (found && !peek && !(v->flags & F_READ)) {
    v->flags |= F_READ;
    t->graph_read++;
    trim_locked(t);
  }
  cp_sitemap_unlock(t->spill);
  return found;
}

static int lookup(cp_corr *t, uint32_t id, cp_launch_site *out, int peek) {
  if (id == 0)
    return 0;
  slot *s = &t->slots[id & t->mask];
  if (atomic_load_explicit(&s->id, memory_order_acquire) == id) {
    *out = s->site;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->id, memory_order_relaxed) == id) {
      if (!peek)
        atomic_fetch_or_explicit(&s->flags, F_READ, memory_order_relaxed);
      return 1;
    }
  }
  return atomic_load_explicit(&t->n_spill, memory_order_relaxed) &&
         spill_get(t, id, out, peek);
}

int cp_corr_get(cp_corr *t, uint32_t id, cp_launch_site *out) {
  return lookup(t, id, out, 0);
}

int cp_corr_peek(cp_corr *t, uint32_t id, cp_launch_site *out) {
  return lookup(t, id, out, 1);
}
