/* backend/cupti/corr.h -- the correlation table (cp_corr_*): CUPTI
 * correlation id -> launch site, written on the launching thread and read on
 * CUPTI's thread, without locks or allocation.
 *
 *   slot = id & (capacity - 1)
 *   +-------------------+----------------------------+
 *   | _Atomic id (seq)  | cp_launch_site (48 bytes)  |   x capacity
 *   +-------------------+----------------------------+
 *
 * A writer first stores 0 in `id`, then the site, then the new id (release);
 * a reader loads the id (acquire), copies the site and re-reads the id: if
 * either read differs from the id it wants, the slot was reused (a ring
 * collision) and the lookup fails. An entry stays readable until its slot is
 * reused, so every kernel of a graph launch finds the one site of the
 * cuGraphLaunch. */
#ifndef CP_BACKEND_CUPTI_CORR_H
#define CP_BACKEND_CUPTI_CORR_H

#include <stddef.h>
#include <stdint.h>

#include "core/session.h"

typedef struct cp_corr cp_corr;

/* A table of `capacity` slots (rounded up to a power of two, at least 64).
 * NULL when out of memory (message set). Not a hot path. */
cp_corr *cp_corr_new(size_t capacity);

/* Frees `t`; NULL is fine. No concurrent put/get may be running. */
void cp_corr_free(cp_corr *t);

/* Forgets every entry (between sessions). No concurrent put/get. */
void cp_corr_clear(cp_corr *t);

/* Stores `site` for correlation id `id` (non-zero). Returns 1 when a live
 * entry of another id that no record has read yet was overwritten (counted
 * by the caller as a collision: its record, if it comes, is unattributed),
 * else 0 -- so a long run that wraps the ring reports nothing lost. Hot path: lock-free, no allocation; one writer per id
 * (CUPTI hands each id to one API call). */
int cp_corr_put(cp_corr *t, uint32_t id, const cp_launch_site *site);

/* Copies the site stored for `id` into `*out` and marks the entry read.
 * Returns 1 when found, 0 when the id is unknown or its slot was reused
 * since. Thread-safe. */
int cp_corr_get(const cp_corr *t, uint32_t id, cp_launch_site *out);

/* Number of slots. */
size_t cp_corr_capacity(const cp_corr *t);

#endif
