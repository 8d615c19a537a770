/* backend/cupti/elf_bytes.h -- the two checks every reader of untrusted
 * cubin and fat-binary bytes makes (fatbin.c, cubin_info.c): a
 * little-endian field of n bytes, and whether [off, off + n) lies within
 * a buffer of `size` bytes (written so that no sum can overflow). */
#ifndef CP_BACKEND_CUPTI_ELF_BYTES_H
#define CP_BACKEND_CUPTI_ELF_BYTES_H

#include <stdint.h>

static inline uint64_t cp_le_read(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static inline int cp_bytes_fit(uint64_t off, uint64_t n, uint64_t size) {
  return off <= size && n <= size - off;
}

#endif
