/* fuzz_cstr.h -- the fuzz input as a NUL-terminated string, for targets
 * whose parser takes one (mode strings); NULL when out of memory. */
#ifndef CP_FUZZ_CSTR_H
#define CP_FUZZ_CSTR_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s) {
    memcpy(s, data, size);
    s[size] = '\0';
  }
  return s;
}

#endif
