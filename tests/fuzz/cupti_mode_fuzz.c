/* cupti_mode_fuzz.c -- libFuzzer target for the CUPTI backend's mode
 * strings (backend/cupti/cupti_mode.c, the pcsampling family, pcs_mode.c,
 * and the pmsampling family, pm_mode.c): any bytes, as a NUL-terminated
 * string; a parse either succeeds with options in range or fails with a
 * message. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_cstr.h"

#include "backend/cupti/cupti_mode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  if (!s)
    return 0;
  cp_cupti_mode m, pcs;
  const cp_pcs_options *o = &m.pcs;
  int rc = cp_cupti_mode_parse(s, &m);
  if (rc == 0 && o->enabled &&
      (o->period_log2 < 5 || o->period_log2 > 31 || o->buffer_pcs < 64))
    abort(); /* accepted out of range */
  const cp_pm_options *p = &m.pm;
  if (rc == 0 && p->enabled &&
      (p->n == 0 || p->n > CP_PM_MAX_METRICS ||
       p->interval_ns < CP_PM_INTERVAL_MIN ||
       p->interval_ns > CP_PM_INTERVAL_MAX || p->ranges < 1 ||
       p->ranges > CP_PM_RANGES_MAX))
    abort(); /* accepted out of range */
  for (size_t i = 0; rc == 0 && p->enabled && i < p->n; i++)
    if (!p->name[i][0] || !p->cupti[i][0])
      abort(); /* a counter without a name */
  if (rc == 0 && cp_cupti_mode_parse("pcsampling", &pcs) == 0)
    (void)cp_cupti_mode_same(&m, &pcs);
  free(s);
  return 0;
}
