/* cupti_mode_fuzz.c -- libFuzzer target for the CUPTI backend's mode
 * strings (backend/cupti/cupti_mode.c and the pcsampling family, pcs_mode.c): any bytes, as a NUL-terminated
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
  if (rc == 0 && cp_cupti_mode_parse("pcsampling", &pcs) == 0)
    (void)cp_cupti_mode_same(&m, &pcs);
  free(s);
  return 0;
}
