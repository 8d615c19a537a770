/* backend/cupti/pcs_mode.c -- parse the CUPTI backend's mode string
 * (grammar in pcs_mode.h). Invariant: anything not in the grammar is an
 * error that names the option, its offset and the valid values. Pure; not a
 * hot path; fuzzed by tests/fuzz/cupti_mode_fuzz.c. Called by the family
 * table (cupti_mode.c) for strings whose first word is "pcsampling". */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/cupti/mode_number.h"
#include "backend/cupti/pcs_mode.h"
#include "core/check.h"
#include "core/error.h"

#define VALID CP_PCS_GRAMMAR

static int bad(const char *mode, size_t at, const char *what) {
  return cp_error_set(CPROTON_EINVAL, "cupti mode '%s': %s at offset %zu "
                      "(valid: '' or " VALID ")", mode, what, at);
}

/* floor(log2(v) + 0.5) for v >= 32: the nearest power of two. */
static uint32_t nearest_log2(uint64_t v) {
  uint32_t k = 0;
  while ((2ull << k) <= v)
    k++;
  uint64_t lo = 1ull << k;
  return v - lo >= (lo << 1) - v && k < 31 ? k + 1 : k;
}

static int option(const char *mode, const char *p, size_t n,
                  cp_pcs_options *o) {
  size_t at = (size_t)(p - mode);
  const char *eq = memchr(p, '=', n);
  size_t key = eq ? (size_t)(eq - p) : n;
  const char *val = eq ? eq + 1 : NULL;
  size_t vn = eq ? n - key - 1 : 0;
  uint64_t v;
  if (key == 5 && !strncmp(p, "exact", 5) && !eq)
    return o->exact = 1, CPROTON_OK;
  if (key == 8 && !strncmp(p, "interval", 8) && eq) {
    if (!cp_mode_number(val, vn, CP_PCS_INTERVAL_MIN, CP_PCS_INTERVAL_MAX, &v))
      return bad(mode, at + 9, "interval must be an integer in "
                 "32..2147483648 (cycles; CUPTI samples every 2^5..2^31)");
    o->interval = v;
    o->period_log2 = nearest_log2(v);
    CP_ASSERT(o->period_log2 >= 5 && o->period_log2 <= 31); /* CUPTI's range */
    return CPROTON_OK;
  }
  if (key == 6 && !strncmp(p, "buffer", 6) && eq) {
    if (!cp_mode_number(val, vn, CP_PCS_BUFFER_MIN, CP_PCS_BUFFER_MAX, &v))
      return bad(mode, at + 7, "buffer must be an integer in 64..1048576 "
                 "(PC records)");
    o->buffer_pcs = (uint32_t)v;
    return CPROTON_OK;
  }
  if (key == 5 && !strncmp(p, "first", 5) && eq) {
    if (!cp_mode_number(val, vn, 0, CP_PCS_FIRST_MAX, &v))
      return bad(mode, at + 6, "first must be an integer in 0..1000 "
                 "(launches per kernel function)");
    o->first = (uint32_t)v;
    return CPROTON_OK;
  }
  return bad(mode, at, "unknown option");
}

int cp_pcs_mode_parse(const char *mode, cp_pcs_options *o) {
  memset(o, 0, sizeof *o);
  o->interval = 1024;
  o->period_log2 = 10;
  o->buffer_pcs = 4096;
  o->first = CP_PCS_FIRST_DEFAULT;
  if (!mode || !*mode)
    return CPROTON_OK;
  size_t head = strcspn(mode, ":,");
  if (head != 10 || strncasecmp(mode, "pcsampling", 10) != 0)
    return bad(mode, 0, "unknown mode");
  o->enabled = 1;
  for (const char *p = mode + head; *p;) {
    p++; /* the separator */
    size_t n = strcspn(p, ":,");
    int rc = option(mode, p, n, o);
    if (rc)
      return rc;
    p += n;
  }
  return CPROTON_OK;
}

int cp_pcs_options_same(const cp_pcs_options *x, const cp_pcs_options *y) {
  return x->enabled == y->enabled && x->exact == y->exact &&
         x->period_log2 == y->period_log2 && x->buffer_pcs == y->buffer_pcs &&
         x->first == y->first;
}
