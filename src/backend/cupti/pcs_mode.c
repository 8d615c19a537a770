/* backend/cupti/pcs_mode.c -- parse the CUPTI backend's mode string
 * (grammar in pcs_mode.h). Invariant: anything not in the grammar is an
 * error that names the option, its offset and the valid values. Pure; not a
 * hot path; fuzzed by tests/fuzz/cupti_mode_fuzz.c. Called by the family
 * table (cupti_mode.c) for strings whose first word is "pcsampling". */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "backend/cupti/mode_options.h"
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

/* interval also sets CUPTI's period, the nearest power of two. */
static int set_interval(void *opts, const cp_mode_value *v) {
  cp_pcs_options *o = opts;
  o->interval = v->number;
  o->period_log2 = nearest_log2(v->number);
  CP_ASSERT(o->period_log2 >= 5 && o->period_log2 <= 31); /* CUPTI's range */
  return CPROTON_OK;
}

/* The family's options (the shared loop in mode_options.c reads them). */
static const cp_mode_opt options[] = {
    {"exact", CP_MODE_FLAG, 0, 0, NULL, CP_MODE_FIELD(cp_pcs_options, exact), NULL},
    {"interval", CP_MODE_NUMBER, CP_PCS_INTERVAL_MIN, CP_PCS_INTERVAL_MAX,
     "interval must be an integer in 32..2147483648 (cycles; CUPTI samples "
     "every 2^5..2^31)", 0, 0, set_interval},
    {"buffer", CP_MODE_NUMBER, CP_PCS_BUFFER_MIN, CP_PCS_BUFFER_MAX,
     "buffer must be an integer in 64..1048576 (PC records)",
     CP_MODE_FIELD(cp_pcs_options, buffer_pcs), NULL},
    {"first", CP_MODE_NUMBER, 0, CP_PCS_FIRST_MAX,
     "first must be an integer in 0..1000 (launches per kernel function)",
     CP_MODE_FIELD(cp_pcs_options, first), NULL},
};

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
  return cp_mode_options_parse(mode, head, ":,", options,
                               sizeof options / sizeof *options, o, bad);
}

int cp_pcs_options_same(const cp_pcs_options *x, const cp_pcs_options *y) {
  return x->enabled == y->enabled && x->exact == y->exact &&
         x->period_log2 == y->period_log2 && x->buffer_pcs == y->buffer_pcs &&
         x->first == y->first;
}
