/* backend/cupti/mode_number.h -- the decimal option values of the CUPTI
 * backend's mode strings (pcs_mode.c, pm_mode.c): digits only, at most 12
 * (no overflow), within [lo, hi]. */
#ifndef CP_BACKEND_CUPTI_MODE_NUMBER_H
#define CP_BACKEND_CUPTI_MODE_NUMBER_H

#include <stddef.h>
#include <stdint.h>

/* The value of p[0..n) in *out; 1 when it is a decimal in lo..hi. */
static inline int cp_mode_number(const char *p, size_t n, uint64_t lo,
                                 uint64_t hi, uint64_t *out) {
  uint64_t v = 0;
  if (n == 0 || n > 12)
    return 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return 0;
    v = v * 10 + (uint64_t)(p[i] - '0');
  }
  *out = v;
  return v >= lo && v <= hi;
}

#endif
