/* backend/cupti/sitemap.h -- a growable map from a 64-bit key to a launch
 * site with a little bookkeeping (cp_sitemap_*), shared by the graph-node
 * table (graph.c) and the correlation ring's spill (corr.c).
 *
 * Open addressing, linear probing, backward-shift deletion (no tombstones);
 * at most 3/4 of the slots are used. The table doubles when it would pass
 * that load, up to a maximum number of slots fixed at creation: memory
 * stays bounded, and a full table says so (put returns 0) instead of
 * overwriting anything. Key 0 is never stored.
 *
 * Locking: one mutex. The *_locked functions need cp_sitemap_lock held;
 * the others take it. None of this is a launch path except the ring's
 * spill, which runs only when a ring slot still holds an entry a record
 * needs (corr.h). */
#ifndef CP_BACKEND_CUPTI_SITEMAP_H
#define CP_BACKEND_CUPTI_SITEMAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/session.h"

/* What a key maps to. `flags` and `gen` are the user's; the memo fields
 * let graph.c keep the last composition of a node (graph.h). */
typedef struct cp_sitemap_value {
  cp_launch_site site;
  const cp_node *memo_launch[CP_CONTEXT_KINDS]; /* launch nodes composed */
  cp_node *memo_out[CP_CONTEXT_KINDS];          /* and the result */
  uint8_t memo_is_op[CP_CONTEXT_KINDS];
  uint8_t memo_valid;
  uint8_t flags;
  uint32_t gen;
  uint32_t tag; /* graph.c: tensor-metric slot + 1 of a copy kernel; 0 */
} cp_sitemap_value;

typedef struct cp_sitemap cp_sitemap;

/* A map of `initial` slots growing to at most `max_slots` (both rounded up
 * to powers of two, at least 64). NULL when out of memory (message set). */
cp_sitemap *cp_sitemap_new(size_t initial, size_t max_slots);

/* Frees `m`; NULL is fine. */
void cp_sitemap_free(cp_sitemap *m);

void cp_sitemap_lock(cp_sitemap *m);
void cp_sitemap_unlock(cp_sitemap *m);

/* Stores `v` under `key` (replacing an entry of that key). Returns 1 when
 * stored, 0 when the map is at its maximum size or growing failed. */
int cp_sitemap_put_locked(cp_sitemap *m, uint64_t key,
                          const cp_sitemap_value *v);

/* The value stored under `key`, or NULL; valid until the lock is
 * released. */
cp_sitemap_value *cp_sitemap_find_locked(cp_sitemap *m, uint64_t key);

/* Removes `key` if present. */
void cp_sitemap_remove_locked(cp_sitemap *m, uint64_t key);

/* Removes every entry for which `drop(value, arg)` returns non-zero;
 * returns how many. O(slots). */
size_t cp_sitemap_drop_locked(cp_sitemap *m,
                              int (*drop)(const cp_sitemap_value *, void *),
                              void *arg);

/* Removes everything (keeps the current size). */
void cp_sitemap_clear_locked(cp_sitemap *m);

/* Entries held, and slots allocated now. */
size_t cp_sitemap_count_locked(const cp_sitemap *m);
size_t cp_sitemap_slots_locked(const cp_sitemap *m);

#endif
