/* core/strtab.h -- process-wide string interning (cp_strtab_*).
 *
 * Names of frames, kernels and metrics become dense 32-bit ids so that the
 * tree compares integers, never strings. Ids are never recycled; strings
 * live until process exit (bounded by the number of distinct names). */
#ifndef CP_CORE_STRTAB_H
#define CP_CORE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#define CP_STRTAB_MAX_LEN 65536u

/* Interns `s` (length `len`, need not be NUL-terminated). Lock-free for a
 * name seen before; allocates once for a new one. Errors: EINVAL (too
 * long), ENOMEM, ELIMIT (more than 2^24 names). Thread-safe. */
int cp_strtab_intern(const char *s, size_t len, uint32_t *id_out);

/* The string of an id returned by cp_strtab_intern (NUL-terminated), or
 * NULL for an id never handed out. Lock-free; thread-safe. */
const char *cp_strtab_str(uint32_t id);

/* Length of the string of `id` (0 for unknown ids). */
size_t cp_strtab_len(uint32_t id);

#endif
