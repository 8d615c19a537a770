/* core/sohash.c -- the split-ordered list behind the context tree and the
 * string table: one sorted list of items, bucket markers linked into it
 * lazily, a bucket table that doubles without moving an item (the layout
 * and the keys are drawn in core/sohash.h).
 *
 * Invariants: keys never decrease along the list; an item's key has its
 * two low bits set, a marker's low bit is clear, and bucket P's marker is
 * keyed P (| LINKED once linked); a link is fully written before the
 * compare-and-swap (release) that makes it reachable, and stays reachable,
 * its key unchanged but for LINKED, until cp_sohash_clear. A marker is
 * linked by the one thread that claimed it; every other thread starts from
 * an ancestor bucket meanwhile, so no one waits.
 * Hot path: yes (scope enter, kernel attribution): no lock, no allocation
 * on lookups. Called by core/cct.c and core/strtab.c. */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/sohash.h"

#define ITEM 3u   /* an item key's low bits */
#define LINKED 2u /* in a marker's key: walks may start here */

static uint64_t key_of(const cp_solink *l) {
  return atomic_load_explicit(&l->key, memory_order_relaxed);
}

static cp_solink *next_of(cp_solink *l) {
  return atomic_load_explicit(&l->next, memory_order_acquire);
}

static unsigned log2_size(const cp_sohash *h) {
  return CP_SOHASH_MIN_LOG2 +
         atomic_load_explicit(&h->doublings, memory_order_relaxed);
}

/* The bucket of key k: its top `bits` bits, in place. */
static uint64_t bucket_of(uint64_t k, unsigned bits) {
  return k & ~(UINT64_MAX >> bits);
}

/* The bucket that p split from: p without its lowest set bit. */
static uint64_t parent_of(uint64_t p) { return p & (p - 1); }

/* p (!= 0) appeared when the table reached 2^level buckets, level =
 * 64 - ctz(p): its marker is in segment level - MIN (0 up to MIN), at
 * p's significant bits but the last (always 1) past segment 0. */
static unsigned seg_of(uint64_t p) {
  unsigned level = 64u - (unsigned)__builtin_ctzll(p);
  return level <= CP_SOHASH_MIN_LOG2 ? 0 : level - CP_SOHASH_MIN_LOG2;
}

static size_t slot_of(uint64_t p, unsigned s) {
  return s ? (size_t)(p >> (__builtin_ctzll(p) + 1))
           : (size_t)(p >> (64 - CP_SOHASH_MIN_LOG2));
}

static size_t seg_len(unsigned s) {
  return (size_t)1 << (s ? CP_SOHASH_MIN_LOG2 + s - 1 : CP_SOHASH_MIN_LOG2);
}

/* Bucket p's marker (p != 0), or NULL while its segment is absent. */
static inline cp_solink *marker(cp_sohash *h, uint64_t p) {
  unsigned s = seg_of(p);
  cp_solink *seg = atomic_load_explicit(&h->segs[s], memory_order_acquire);
  return seg ? &seg[slot_of(p, s)] : NULL;
}

/* Bucket p's marker, its segment allocated first if absent; NULL without
 * memory. */
static cp_solink *marker_made(cp_sohash *h, uint64_t p) {
  cp_solink *m = marker(h, p);
  if (m)
    return m;
  unsigned s = seg_of(p);
  cp_solink *seg = NULL, *fresh = calloc(seg_len(s), sizeof *fresh);
  if (!fresh)
    return NULL;
  if (atomic_compare_exchange_strong_explicit(&h->segs[s], &seg, fresh,
                                              memory_order_acq_rel,
                                              memory_order_acquire))
    seg = fresh;
  else
    free(fresh); /* another thread's segment won; seg holds it */
  return &seg[slot_of(p, s)];
}

static int is_linked(const cp_solink *m) {
  return (atomic_load_explicit(&m->key, memory_order_acquire) & LINKED) != 0;
}

/* Bucket p's marker when it is linked, else its nearest linked ancestor's
 * (bucket 0's marker, the head, always is). Lookups start there. */
static cp_solink *start_of(cp_sohash *h, uint64_t p) {
  for (; p; p = parent_of(p)) {
    cp_solink *m = marker(h, p);
    if (m && is_linked(m))
      return m;
  }
  return &h->head;
}

/* From *prev (whose key is below `key`), the first link whose key is not
 * below `key`; *prev becomes the link before it. */
static cp_solink *seek(cp_solink **prev, uint64_t key) {
  cp_solink *p = *prev, *c = next_of(p);
  while (c && key_of(c) < key) {
    CP_ASSERT(key_of(c) >= key_of(p));
    p = c;
    c = next_of(c);
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
  uint64_t k = key_of(fresh);
  cp_solink *prev = from;
  CP_ASSERT(key_of(from) < k);
  for (;;) {
    cp_solink *c = seek(&prev, k), *at = prev;
    for (; c && key_of(c) == k; at = c, c = next_of(c))
      if (eq && eq(c, key))
        return c;
    atomic_store_explicit(&fresh->next, c, memory_order_relaxed);
    if (atomic_compare_exchange_weak_explicit(&at->next, &c, fresh,
                                              memory_order_release,
                                              memory_order_relaxed))
      return fresh;
  }
}

/* Bucket p's marker, linked now if no thread has claimed it; while another
 * thread links it (or without memory for its segment), an ancestor's. */
static cp_solink *start_for_insert(cp_sohash *h, uint64_t p) {
  if (!p)
    return &h->head;
  cp_solink *m = marker_made(h, p);
  if (!m)
    return start_for_insert(h, parent_of(p));
  uint64_t state = atomic_load_explicit(&m->key, memory_order_acquire);
  if (state & LINKED)
    return m;
  cp_solink *parent = start_for_insert(h, parent_of(p));
  /* the claim: 0 -> p, the key the marker is linked under */
  if (state != 0 ||
      !atomic_compare_exchange_strong_explicit(
          &m->key, &state, p, memory_order_relaxed, memory_order_relaxed))
    return parent;
  cp_solink *linked = link_after(parent, m, NULL, NULL);
  CP_ASSERT(linked == m);
  (void)linked;
  atomic_store_explicit(&m->key, p | LINKED, memory_order_release);
  return m;
}

cp_solink *cp_sohash_first(cp_sohash *h, uint64_t hash) {
  uint64_t k = hash | ITEM;
  cp_solink *prev = start_of(h, bucket_of(k, log2_size(h)));
  cp_solink *c = seek(&prev, k);
  return c && key_of(c) == k ? c : NULL;
}

cp_solink *cp_sohash_next_same(cp_solink *item) {
  cp_solink *c = next_of(item);
  return c && key_of(c) == key_of(item) ? c : NULL;
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
  uint64_t k = hash | ITEM;
  atomic_store_explicit(&fresh->key, k, memory_order_relaxed);
  cp_solink *from = start_for_insert(h, bucket_of(k, log2_size(h)));
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
  cp_solink *l = next_of(&h->head);
  while (l) {
    cp_solink *next = next_of(l);
    if (key_of(l) & 1) /* markers live in the segments, freed below */
      free_item(l);
    l = next;
  }
  for (unsigned s = 0; s < CP_SOHASH_SEGS; s++)
    free(atomic_load_explicit(&h->segs[s], memory_order_relaxed));
  memset(h, 0, sizeof *h);
}

void cp_sohash_stats_get(cp_sohash *h, cp_sohash_stats *out) {
  memset(out, 0, sizeof *out);
  out->n_buckets = (size_t)1 << log2_size(h);
  out->n_markers = 1;
  out->sorted = 1;
  size_t run = 0;
  uint64_t last = 0;
  for (cp_solink *l = next_of(&h->head); l; l = next_of(l)) {
    uint64_t k = key_of(l);
    if (k < last)
      out->sorted = 0;
    last = k;
    if (!(k & 1)) {
      out->n_markers++;
      run = 0;
      continue;
    }
    out->n_items++;
    if (++run > out->longest_run)
      out->longest_run = run;
  }
}
