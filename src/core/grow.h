/* core/grow.h -- the one way cproton grows an array: capacity doubled from
 * a first size until it holds `need` elements, every multiplication checked
 * for overflow, realloc'ed once. On failure nothing changes (the old array
 * and capacity stay valid), so callers keep what they had. */
#ifndef CP_CORE_GROW_H
#define CP_CORE_GROW_H

#include <stddef.h>

/* Makes room for `need` elements of `elem` bytes in `data` (capacity
 * `*cap` elements; NULL with *cap == 0 for none yet; an empty array starts
 * at `first`). On success *out is the (maybe moved) array, *cap its new
 * capacity, and 0 is returned; when it already fits, *out = data. Errors:
 * ENOMEM (out of memory, or the size overflows size_t), with a message;
 * then `data` and *cap are unchanged and *out is NULL. */
int cp_grow(void *data, size_t *cap, size_t need, size_t elem, size_t first,
            void **out);

#endif
