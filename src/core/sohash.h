/* core/sohash.h -- a growable, lock-free hash set of intrusive links
 * (cp_sohash_*): the index under the context tree (core/cct.c) and the
 * string table (core/strtab.c).
 *
 * A split-ordered list (after Shalev and Shavit, "Split-ordered lists",
 * 2006): every item of the set is in ONE singly linked list sorted by its
 * key, its 64-bit hash; with 2^k buckets, bucket P holds the items whose
 * key's top k bits are P's, and is a marker link keyed P (those k bits in
 * place, the rest 0) where they begin. With 4 buckets (k = 2):
 *
 *   head(P=00) -> item -> mark(P=01) -> item -> item -> mark(P=10) -> ...
 *   key: 00 0..0   00..11  01 0..0 10    01..11  01..11  10 0..0 10
 *
 * Doubling the table moves no item: bucket P's items split between P and
 * P + 2^(63-k) (the next bit set), whose marker is linked right after P's
 * by the first insert that lands in it; until then walks start at P, the
 * new bucket's parent (itself without its lowest set bit). So a lookup
 * reads a marker and ~1.4 items whatever the size, readers never lock,
 * wait or allocate, and nothing is unlinked but by cp_sohash_clear. (The
 * paper orders by the bit-reversed hash and buckets by its low bits; the
 * same list ordered by the hash's top bits needs no reversal.)
 *
 * Keys: an item's is its hash with the two low bits set; a marker's is P
 * while the one thread that claimed it links it, then P | 2 once linked
 * (no key lies between the two: the change never reorders the list); a
 * marker no thread has claimed reads 0. Hashes must be well mixed in their
 * top bits (they pick the bucket).
 *
 * Memory: one marker of 16 bytes per bucket, 1 to 2 buckets per item, in
 * one segment per doubling (the markers that doubling added). */
#ifndef CP_CORE_SOHASH_H
#define CP_CORE_SOHASH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The link an item embeds. `key` is set by cp_sohash_insert; both fields
 * belong to the set. */
typedef struct cp_solink {
  _Atomic uint64_t key; /* the hash; low bit 1 for items only */
  _Atomic(struct cp_solink *) next;
} cp_solink;

#define CP_SOHASH_MIN_LOG2 8  /* buckets of an empty set: 256 */
#define CP_SOHASH_MAX_LOG2 25 /* past 2^25 buckets chains grow instead */
#define CP_SOHASH_MAX_LOAD 1  /* items per bucket before the table doubles */
#define CP_SOHASH_SEGS (CP_SOHASH_MAX_LOG2 - CP_SOHASH_MIN_LOG2 + 1)

/* A set. All zeroes is an empty set (static storage needs no init). */
typedef struct cp_sohash {
  cp_solink head; /* bucket 0's marker, key 0: always linked */
  /* segment 0: the first 2^MIN buckets' markers; segment s: the 2^(MIN+s-1)
   * that the table's s-th doubling added */
  _Atomic(cp_solink *) segs[CP_SOHASH_SEGS];
  atomic_uint doublings; /* buckets = 2^(CP_SOHASH_MIN_LOG2 + doublings) */
  atomic_size_t n_items;
} cp_sohash;

/* Whether `item` is the one `key` describes (the caller's key type). */
typedef int (*cp_sohash_eq)(const cp_solink *item, const void *key);

/* Lookup: the first item keyed like `hash` (top bits well mixed), or NULL;
 * then cp_sohash_next_same until NULL gives the others (hashes that differ
 * only in their two low bits). The caller compares its own key on each:
 *
 *   for (cp_solink *l = cp_sohash_first(h, hash); l; l = cp_sohash_next_same(l))
 *     if (same(l, key)) return l;
 *
 * Lock-free, no allocation, any thread. Hot path. */
cp_solink *cp_sohash_first(cp_sohash *h, uint64_t hash);
cp_solink *cp_sohash_next_same(cp_solink *item);

/* Adds `fresh` (owned by the caller, fields other than the link set) unless
 * an item equal to `key` is there; returns the item now in the set: `fresh`,
 * or the other one, and then `fresh` was not linked and is the caller's to
 * free. Lock-free; allocates a segment when the table has doubled (without
 * memory it starts from a coarser bucket: slower, never wrong). Never
 * fails. Any thread. */
cp_solink *cp_sohash_insert(cp_sohash *h, uint64_t hash, cp_solink *fresh,
                            cp_sohash_eq eq, const void *key);

/* Items in the set. */
size_t cp_sohash_count(const cp_sohash *h);

/* Unlinks every item, passing each to `free_item`, frees the buckets and
 * leaves an empty set. The caller guarantees that no thread uses `h`. */
void cp_sohash_clear(cp_sohash *h, void (*free_item)(cp_solink *));

/* What a walk of the whole list finds (tests, benchmarks). */
typedef struct cp_sohash_stats {
  size_t n_items;     /* items linked */
  size_t n_buckets;   /* buckets of the table now */
  size_t n_markers;   /* buckets whose marker is linked (bucket 0 included) */
  size_t longest_run; /* most items between two markers: a lookup's worst */
  int sorted;         /* 1 when keys never decrease along the list */
} cp_sohash_stats;

/* Walks `h` and fills `out`. Callers guarantee no concurrent insert. */
void cp_sohash_stats_get(cp_sohash *h, cp_sohash_stats *out);

#endif
