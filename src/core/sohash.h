/* core/sohash.h -- a growable, lock-free hash set of intrusive links
 * (cp_sohash_*): the index under the context tree (core/cct.c) and the
 * string table (core/strtab.c).
 *
 * A split-ordered list (Shalev and Shavit, "Split-ordered lists", 2006):
 * every item of the set is in ONE singly linked list, sorted by its key, the
 * bit-reversed hash; bucket b of a table of 2^k buckets is a marker link in
 * that list where the items whose hash ends in b's k bits begin:
 *
 *   head(b=0) -> item -> item -> mark(b=2) -> item -> mark(b=1) -> item ...
 *   key:  0      ..11    ..11    010..10      ..11    100..10      ..11
 *
 * Keys: an item's is reverse(hash) with the two low bits set; bucket b's
 * marker's is reverse(b) (whose low 39 bits are clear, b < 2^25) while the
 * thread that claimed it links it, then reverse(b) | 2 once linked: no key
 * lies between the two, so the change never reorders the list; 0 is a
 * marker no thread has claimed.
 *
 * Doubling the table moves no item: bucket b's items split between b and
 * b + 2^k, and the new bucket's marker is linked (right after its parent's,
 * b without its top bit) by the first insert that hashes to it. So a lookup
 * walks ~2 items whatever the size, readers never lock, wait or allocate,
 * and nothing is ever unlinked but by cp_sohash_clear.
 *
 * Memory: one marker of 16 bytes per bucket, 1 to 2 buckets per item, in
 * segments that double with the table (one allocation per doubling). A
 * lookup reads the bucket's marker and ~1.4 items. */
#ifndef CP_CORE_SOHASH_H
#define CP_CORE_SOHASH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The link an item embeds. `key` is set by cp_sohash_insert; both fields
 * belong to the set. */
typedef struct cp_solink {
  _Atomic uint64_t key; /* bit-reversed hash; low bit 1 for items only */
  _Atomic(struct cp_solink *) next;
} cp_solink;

#define CP_SOHASH_MIN_LOG2 8  /* buckets of an empty set: 256 */
#define CP_SOHASH_MAX_LOG2 25 /* past 2^25 buckets chains grow instead */
#define CP_SOHASH_MAX_LOAD 1  /* items per bucket before the table doubles */
#define CP_SOHASH_SEGS (CP_SOHASH_MAX_LOG2 - CP_SOHASH_MIN_LOG2 + 1)

/* A set. All zeroes is an empty set (static storage needs no init). */
typedef struct cp_sohash {
  cp_solink head; /* bucket 0's marker, key 0: always linked */
  /* segment 0: buckets [0, 2^MIN); segment s: [2^(MIN+s-1), 2^(MIN+s)) */
  _Atomic(cp_solink *) segs[CP_SOHASH_SEGS]; /* bucket markers */
  atomic_uint doublings; /* buckets = 2^(CP_SOHASH_MIN_LOG2 + doublings) */
  atomic_size_t n_items;
} cp_sohash;

/* Whether `item` is the one `key` describes (the caller's key type). */
typedef int (*cp_sohash_eq)(const cp_solink *item, const void *key);

/* The item equal to `key` (hash `hash`), or NULL. Lock-free, no
 * allocation, any thread. Hot path. */
cp_solink *cp_sohash_find(cp_sohash *h, uint64_t hash, cp_sohash_eq eq,
                          const void *key);

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
