/* core/fnv.h -- FNV-1a (cp_fnv_*), the one hash the core's tables use for
 * names and small keys: kernel facts, kernel times, context frame names,
 * the string table (which adds its own finaliser). Header-only: the loops
 * are a few instructions and sit on lookup paths. */
#ifndef CP_CORE_FNV_H
#define CP_CORE_FNV_H

#include <stddef.h>
#include <stdint.h>

#define CP_FNV_BASIS 14695981039346656037ull

/* One step: x folded into h. */
static inline uint64_t cp_fnv_mix(uint64_t h, uint64_t x) {
  return (h ^ x) * 1099511628211ull;
}

/* A NUL-terminated string's bytes, from the basis. */
static inline uint64_t cp_fnv_str(const char *s) {
  uint64_t h = CP_FNV_BASIS;
  for (; *s; s++)
    h = cp_fnv_mix(h, (unsigned char)*s);
  return h;
}

/* `len` bytes, from the basis. */
static inline uint64_t cp_fnv_bytes(const char *s, size_t len) {
  uint64_t h = CP_FNV_BASIS;
  for (size_t i = 0; i < len; i++)
    h = cp_fnv_mix(h, (unsigned char)s[i]);
  return h;
}

#endif
