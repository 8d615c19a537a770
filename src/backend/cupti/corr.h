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
 * cuGraphLaunch.
 *
 * Spill. A slot about to be reused may still hold an entry a record needs:
 * one no record has read yet, or a graph launch's (each of its kernels
 * reads it). Such an entry moves to a spill map (sitemap.h, locked, growing
 * up to CP_CORR_SPILL_SLOTS) before the slot is reused; lookups that miss
 * the ring look there. A launch made while its thread captures a stream
 * gets no record (its kernel becomes a graph node), so overwriting it loses
 * nothing. Spilled graph-launch entries that records have read are kept for
 * CP_CORR_SPILL_GRAPHS spills; an unread entry stays until its record
 * reads it, or until the map is full: then the older half expires (counted;
 * a record that still comes is unattributed, counted). Only a spill that
 * fails even then (out of memory) loses an entry as a collision. */
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

/* The spill map's largest size, and for how many later spills it keeps a
 * read graph-launch entry. */
#define CP_CORR_SPILL_SLOTS ((size_t)1 << 18)
#define CP_CORR_SPILL_GRAPHS 4096

/* What a put stores with its site. */
enum {
  CP_CORR_CAPTURED = 1, /* launched into a capturing stream: no record */
  CP_CORR_GRAPH = 2,    /* a graph launch: one record per kernel node */
};

/* What cp_corr_put did with the entry its slot held. */
enum {
  CP_CORR_STORED = 0,    /* nothing a record needs was there */
  CP_CORR_COLLISION = 1, /* an entry a record needs was lost (no memory) */
  CP_CORR_SPILLED = 2,   /* an entry a record needs moved to the spill */
};

/* Stores `site` for correlation id `id` (non-zero) with `flags`
 * (CP_CORR_*). Returns CP_CORR_STORED, CP_CORR_SPILLED or CP_CORR_COLLISION
 * (counted by the caller: that record, if it comes, is unattributed) -- so
 * a long run that wraps the ring reports nothing lost. Hot path: lock-free,
 * no allocation unless a slot's entry must spill (the records thread is
 * 65,536 launches behind); one writer per id (CUPTI hands each id to one
 * API call). */
int cp_corr_put(cp_corr *t, uint32_t id, const cp_launch_site *site,
                unsigned flags);

/* Copies the site stored for `id` into `*out` and marks the entry read
 * (a spilled entry of a single launch is then dropped). Returns 1 when
 * found, 0 when the id is unknown or its entry was lost. Thread-safe. */
int cp_corr_get(cp_corr *t, uint32_t id, cp_launch_site *out);

/* Like cp_corr_get, but leaves the entry as it was (not marked read, not
 * dropped from the spill): for readers beside the kernel records (PC
 * sampling). */
int cp_corr_peek(cp_corr *t, uint32_t id, cp_launch_site *out);

/* Number of slots. */
size_t cp_corr_capacity(const cp_corr *t);

/* Entries spilled so far, unread entries expired from a full spill map,
 * and entries the spill map holds now. */
uint64_t cp_corr_spilled(cp_corr *t);
uint64_t cp_corr_expired(cp_corr *t);
size_t cp_corr_spill_count(cp_corr *t);

#endif
