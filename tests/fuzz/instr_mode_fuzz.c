/* instr_mode_fuzz.c -- libFuzzer target for Proton's instrumentation mode
 * strings (backend/instrumentation/mode.c: "default:key=value:..."): any
 * bytes, as a NUL-terminated string; a parse either succeeds with every
 * option in range or fails with a message, and the entry points agree on
 * whether the string is valid and on its `reduce` (the one-parse
 * cproton_instr_mode_parse with the others). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_cstr.h"

#include "cproton/cproton.h"

static int in_range(const cproton_ptx_options *o) {
  return (unsigned)o->counter <= CPROTON_COUNTER_GLOBALTIMER && (unsigned)o->buffer <= CPROTON_BUFFER_GLOBAL &&
         (unsigned)o->granularity <= CPROTON_GRANULARITY_WARPGROUP_8 &&
         (unsigned)o->strategy <= CPROTON_STRATEGY_FLUSH && o->buffer_size <= (1u << 30) &&
         (o->aggregate == 0 || o->aggregate == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  if (!s)
    return 0;
  cproton_ptx_options o;
  int rc = cproton_instr_mode_options(s, &o);
  if (rc == 0 && !in_range(&o))
    abort(); /* accepted out of range */
  if (rc != 0 && !*cproton_last_error())
    abort(); /* refused without a message */
  unsigned flags;
  int dev;
  cproton_reduce_kind kind;
  if ((cproton_instr_mode_decode_flags(s, &flags) == 0) != (rc == 0) ||
      (cproton_instr_mode_reduce(s, &dev) == 0) != (rc == 0) ||
      (cproton_instr_mode_reduce_kind(s, &kind) == 0) != (rc == 0))
    abort(); /* the entry points disagree */
  if (rc == 0 && (o.aggregate != (kind == CPROTON_REDUCE_KERNEL) || dev != (kind != CPROTON_REDUCE_HOST)))
    abort(); /* reduce=kernel and the options disagree */
  /* the canonical form (what Python parses) is accepted exactly when the
   * string is, means the same options and is its own canonical form */
  char canon[4096], again[4096];
  cproton_ptx_options o2;
  if ((cproton_instr_mode_normalize(s, canon, sizeof canon) == 0) != (rc == 0))
    abort();
  if (rc == 0 && (cproton_instr_mode_options(canon, &o2) || memcmp(&o, &o2, sizeof o) ||
                  cproton_instr_mode_normalize(canon, again, sizeof again) || strcmp(canon, again)))
    abort();
  /* the one-parse entry point (the Python hook's) says the same: for a
   * tree it refuses only reduce=kernel with time_shift, for a trace also
   * reduce=kernel itself */
  cproton_instr_mode_info *info = malloc(sizeof *info);
  for (int trace = 0; info && trace < 2; trace++) {
    int prc = cproton_instr_mode_parse(s, trace, info);
    int refused = rc == 0 && kind == CPROTON_REDUCE_KERNEL &&
                  (trace || (flags & CPROTON_DECODE_TIME_SHIFT));
    if ((prc == 0) != (rc == 0 && !refused))
      abort();
    if (prc == 0 && (memcmp(&info->options, &o, sizeof o) || info->reduce != kind ||
                     info->decode_flags != flags || strcmp(info->canonical, canon) ||
                     info->sums_in_kernel_host_buffer))
      abort();
  }
  free(info);
  free(s);
  return 0;
}
