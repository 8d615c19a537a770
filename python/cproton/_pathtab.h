/* _pathtab.h -- paths of frame ids interned once, for the backward link's
 * forward record (see _pathtab.c). Not thread-safe: the caller locks. */
#ifndef CPROTON_PY_PATHTAB_H
#define CPROTON_PY_PATHTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct cpy_pathtab cpy_pathtab;

/* A table for at most `max_paths` paths holding `max_ids` ids in all.
 * NULL when out of memory. Free with cpy_pathtab_free (NULL accepted). */
cpy_pathtab *cpy_pathtab_new(size_t max_paths, size_t max_ids);
void cpy_pathtab_free(cpy_pathtab *t);

/* The index of the path equal to ids[0, n): the one interned before, or a
 * copy added now. -1 when the table is full (the caller counts it). */
int32_t cpy_pathtab_intern(cpy_pathtab *t, const uint32_t *ids, size_t n);

/* Path `i` (from cpy_pathtab_intern): its ids, owned by the table until
 * cpy_pathtab_free, and their number in *n. */
const uint32_t *cpy_pathtab_get(const cpy_pathtab *t, int32_t i, size_t *n);

#endif
