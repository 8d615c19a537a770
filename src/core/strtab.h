/* core/strtab.h -- process-wide string interning (cp_strtab_*).
 *
 * Names of frames, kernels and metrics become 32-bit ids so that the tree
 * compares integers, never strings. Two tiers: kept names (frames, kernels,
 * metrics: ids that caches outside the core hold) live until process exit;
 * scoped names (scopes, states, ops) live until the session module empties
 * their tier, when no session is in use and no thread holds one of them. */
#ifndef CP_CORE_STRTAB_H
#define CP_CORE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "core/sohash.h"

#define CP_STRTAB_MAX_LEN 65536u

/* Interns `s` (length `len`, need not be NUL-terminated). Lock-free for a
 * name seen before; allocates once for a new one. Errors: EINVAL (too
 * long), ENOMEM, ELIMIT (more than 2^24 names). Thread-safe. */
int cp_strtab_intern(const char *s, size_t len, uint32_t *id_out);

/* Like cp_strtab_intern, for a scope, state or op name: the id is a kept
 * one when the name is kept already, else a scoped one (bit 24 set), valid
 * until cp_strtab_scoped_reset. Same errors; lock-free for known names.
 * Ids of both tiers are below 2^25. */
int cp_strtab_intern_scoped(const char *s, size_t len, uint32_t *id_out);

/* The string of an id returned by cp_strtab_intern (NUL-terminated), or
 * NULL for an id never handed out. Lock-free; thread-safe. */
const char *cp_strtab_str(uint32_t id);

/* Length of the string of `id` (0 for unknown ids). */
size_t cp_strtab_len(uint32_t id);

/* Makes cp_strtab_str(id) return a copy of `label` from now on, while
 * interning still matches the original string: names that can only be
 * spelled out later (native frames are interned by address at a launch
 * and symbolized at finalize, core/native.c). A kept id only (its entry is
 * never freed); the first label set stays, later calls change nothing.
 * Errors: EINVAL (unknown or scoped id, label too long), ENOMEM. */
int cp_strtab_set_label(uint32_t id, const char *label);

/* Frees every scoped name; later ids may repeat earlier ones. The caller
 * guarantees that no thread is interning or reading a scoped name and that
 * no scoped id survives anywhere (core/session.c's compaction). */
void cp_strtab_scoped_reset(void);

/* A small index for `id` in tables keyed by name (bitsets): the two tiers'
 * ids interleaved, so it stays near twice the number of names. */
uint32_t cp_strtab_index(uint32_t id);

/* Scoped names alive now (for tests and stats). */
size_t cp_strtab_scoped_count(void);

/* A tier's hash set as a walk finds it: the scoped tier when `scoped_tier`
 * is set, else the kept one (tests, benchmarks); no thread may intern a
 * name meanwhile. */
void cp_strtab_stats(int scoped_tier, cp_sohash_stats *out);

#endif
