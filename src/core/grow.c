/* core/grow.c -- overflow-checked capacity doubling (grow.h). Not a hot
 * path: called only when an array is full. Called by every growable array
 * in src/ and tools/. */
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/grow.h"

int cp_grow(void *data, size_t *cap, size_t need, size_t elem, size_t first,
            void **out) {
  *out = NULL;
  if (need <= *cap) {
    *out = data;
    return CPROTON_OK;
  }
  size_t n = *cap ? *cap : (first ? first : 1);
  while (n < need) {
    if (n > SIZE_MAX / 2)
      return cp_error_set(CPROTON_ENOMEM, "array of %zu elements too large", need);
    n *= 2;
  }
  if (elem && n > SIZE_MAX / elem)
    return cp_error_set(CPROTON_ENOMEM, "array of %zu elements of %zu bytes too large", n, elem);
  void *p = realloc(data, n * elem);
  if (!p)
    return cp_error_set(CPROTON_ENOMEM, "out of memory growing an array to %zu elements", n);
  *out = p;
  *cap = n;
  return CPROTON_OK;
}
