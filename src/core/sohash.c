/* core/sohash.c -- the split-ordered list behind the context tree and the
 * string table: one sorted list of items, bucket markers linked into it
 * lazily, a bucket table that doubles without moving an item (the layout
 * is drawn in core/sohash.h).
 *
 * Invariants: keys never decrease along the list; an item's key is odd, a
 * marker's even, and bucket b's marker key is reverse(b); a link is fully
 * written before the compare-and-swap (release) that makes it reachable,
 * and stays reachable and unchanged, but for its `next`, until
 * cp_sohash_clear. A marker is linked by the one thread that claimed it;
 * every other thread starts from an ancestor bucket meanwhile, so no one
 * waits. Hot path: yes (scope enter, kernel attribution): no lock, no
 * allocation on lookups. Called by core/cct.c and core/strtab.c. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/sohash.h"

enum { FRESH, CLAIMED, LINKED }; /* a marker's state */

struct cp_sobucket {
  cp_solink mark;
  atomic_uint state;
};

static uint64_t reverse(uint64_t x) {
  x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
  x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
  x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
  return __builtin_bswap64(x);
}

static unsigned top_bit(uint64_t b) { return 63u - (unsigned)__builtin_clzll(b); }

/* b without its highest set bit: the bucket that b split from. */
static uint64_t parent_of(uint64_t b) { return b & ~(1ULL << top_bit(b)); }

static uint64_t mask_of(const cp_sohash *h) {
  unsigned d = atomic_load_explicit(&h->doublings, memory_order_relaxed);
  return (1ULL << (CP_SOHASH_MIN_LOG2 + d)) - 1;
}

static unsigned seg_of(uint64_t b) {
  unsigned t = top_bit(b);
  return t < CP_SOHASH_MIN_LOG2 ? 0 : t - CP_SOHASH_MIN_LOG2 + 1;
}

static uint64_t seg_first(unsigned s) {
  return s ? 1ULL << (CP_SOHASH_MIN_LOG2 + s - 1) : 0;
}

static size_t seg_len(unsigned s) {
  return (size_t)1 << (s ? CP_SOHASH_MIN_LOG2 + s - 1 : CP_SOHASH_MIN_LOG2);
}

/* Bucket b (>= 1); its segment is allocated when `make` is set. NULL when
 * the segment is absent (not made, or no memory). */
static cp_sobucket *bucket(cp_sohash *h, uint64_t b, int make) {
  unsigned s = seg_of(b);
  cp_sobucket *seg = atomic_load_explicit(&h->segs[s], memory_order_acquire);
  if (!seg && make) {
    cp_sobucket *fresh = calloc(seg_len(s), sizeof *fresh);
    if (!fresh)
      return NULL;
    if (atomic_compare_exchange_strong_explicit(&h->segs[s], &seg, fresh,
                                                memory_order_acq_rel,
                                                memory_order_acquire))
      seg = fresh;
    else
      free(fresh); /* another thread's segment won; seg holds it */
  }
  return seg ? &seg[b - seg_first(s)] : NULL;
}

/* Bucket b's marker when it is linked, else its nearest linked ancestor's
 * (bucket 0's marker, the head, always is). Lookups start there. */
static cp_solink *start_of(cp_sohash *h, uint64_t b) {
  for (; b; b = parent_of(b)) {
    cp_sobucket *k = bucket(h, b, 0);
    if (k && atomic_load_explicit(&k->state, memory_order_acquire) == LINKED)
      return &k->mark;
  }
  return &h->head;
}

/* From *prev (whose key is below `key`), the first link whose key is not
 * below `key`; *prev becomes the link before it. */
static cp_solink *seek(cp_solink **prev, uint64_t key) {
  cp_solink *p = *prev;
  cp_solink *c = atomic_load_explicit(&p->next, memory_order_acquire);
  while (c && c->key < key) {
    assert(c->key >= p->key);
    p = c;
    c = atomic_load_explicit(&c->next, memory_order_acquire);
  }
  *prev = p;
  return c;
}

/* Links `fresh` into key order after `from` unless an equal item (`eq`;
 * NULL for markers, whose keys are unique) is there; returns the linked
 * one. Lock-free: a failed CAS means another link went in after `prev`,
 * which still precedes `fresh`'s place, so the walk resumes there. */
static cp_solink *link_after(cp_solink *from, cp_solink *fresh,
                             cp_sohash_eq eq, const void *key) {
  cp_solink *prev = from;
  assert(from->key < fresh->key);
  for (;;) {
    cp_solink *c = seek(&prev, fresh->key);
    cp_solink *at = prev;
    for (; c && c->key == fresh->key;
         at = c, c = atomic_load_explicit(&c->next, memory_order_acquire))
      if (eq && eq(c, key))
        return c;
    atomic_store_explicit(&fresh->next, c, memory_order_relaxed);
    if (atomic_compare_exchange_weak_explicit(&at->next, &c, fresh,
                                              memory_order_release,
                                              memory_order_relaxed))
      return fresh;
  }
}

/* Bucket b's marker, linked now if no thread has claimed it; while another
 * thread links it (or without memory for its segment), an ancestor's. */
static cp_solink *start_for_insert(cp_sohash *h, uint64_t b) {
  if (!b)
    return &h->head;
  cp_sobucket *k = bucket(h, b, 1);
  if (!k)
    return start_for_insert(h, parent_of(b));
  unsigned state = atomic_load_explicit(&k->state, memory_order_acquire);
  if (state == LINKED)
    return &k->mark;
  cp_solink *parent = start_for_insert(h, parent_of(b));
  if (state != FRESH ||
      !atomic_compare_exchange_strong_explicit(&k->state, &state, CLAIMED,
                                               memory_order_acquire,
                                               memory_order_acquire))
    return parent;
  k->mark.key = reverse(b);
  cp_solink *linked = link_after(parent, &k->mark, NULL, NULL);
  assert(linked == &k->mark);
  (void)linked;
  atomic_store_explicit(&k->state, LINKED, memory_order_release);
  return &k->mark;
}

cp_solink *cp_sohash_find(cp_sohash *h, uint64_t hash, cp_sohash_eq eq,
                          const void *key) {
  uint64_t k = reverse(hash) | 1;
  cp_solink *prev = start_of(h, hash & mask_of(h));
  cp_solink *c = seek(&prev, k);
  for (; c && c->key == k;
       c = atomic_load_explicit(&c->next, memory_order_acquire))
    if (eq(c, key))
      return c;
  return NULL;
}

/* Doubles the table once it holds more than MAX_LOAD items per bucket; a
 * thread that loses the race leaves it to the winner. */
static void grow(cp_sohash *h, size_t n_items) {
  unsigned d = atomic_load_explicit(&h->doublings, memory_order_relaxed);
  size_t buckets = (size_t)1 << (CP_SOHASH_MIN_LOG2 + d);
  if (d + 1 < CP_SOHASH_SEGS && n_items > CP_SOHASH_MAX_LOAD * buckets)
    atomic_compare_exchange_strong_explicit(&h->doublings, &d, d + 1,
                                            memory_order_relaxed,
                                            memory_order_relaxed);
}

cp_solink *cp_sohash_insert(cp_sohash *h, uint64_t hash, cp_solink *fresh,
                            cp_sohash_eq eq, const void *key) {
  fresh->key = reverse(hash) | 1;
  cp_solink *from = start_for_insert(h, hash & mask_of(h));
  cp_solink *linked = link_after(from, fresh, eq, key);
  if (linked == fresh)
    grow(h, atomic_fetch_add_explicit(&h->n_items, 1, memory_order_relaxed) +
                1);
  return linked;
}

size_t cp_sohash_count(const cp_sohash *h) {
  return atomic_load_explicit(&h->n_items, memory_order_relaxed);
}

void cp_sohash_clear(cp_sohash *h, void (*free_item)(cp_solink *)) {
  cp_solink *l = atomic_load_explicit(&h->head.next, memory_order_acquire);
  while (l) {
    cp_solink *next = atomic_load_explicit(&l->next, memory_order_relaxed);
    if (l->key & 1) /* markers live in the segments, freed below */
      free_item(l);
    l = next;
  }
  for (unsigned s = 0; s < CP_SOHASH_SEGS; s++)
    free(atomic_load_explicit(&h->segs[s], memory_order_relaxed));
  memset(h, 0, sizeof *h);
}

void cp_sohash_stats_get(cp_sohash *h, cp_sohash_stats *out) {
  memset(out, 0, sizeof *out);
  out->n_buckets = (size_t)mask_of(h) + 1;
  out->n_markers = 1;
  out->sorted = 1;
  size_t run = 0;
  uint64_t last = 0;
  for (cp_solink *l = atomic_load_explicit(&h->head.next, memory_order_acquire);
       l; l = atomic_load_explicit(&l->next, memory_order_acquire)) {
    if (l->key < last)
      out->sorted = 0;
    last = l->key;
    if (!(l->key & 1)) {
      out->n_markers++;
      run = 0;
      continue;
    }
    out->n_items++;
    if (++run > out->longest_run)
      out->longest_run = run;
  }
}
