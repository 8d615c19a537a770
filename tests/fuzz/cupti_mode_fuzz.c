/* cupti_mode_fuzz.c -- libFuzzer target for the CUPTI backend's mode
 * strings (backend/cupti/pcs_mode.c): any bytes, as a NUL-terminated
 * string; a parse either succeeds with options in range or fails with a
 * message. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_cstr.h"

#include "backend/cupti/pcs_mode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  if (!s)
    return 0;
  cp_pcs_options o;
  if (cp_pcs_mode_parse(s, &o) == 0 && o.enabled &&
      (o.period_log2 < 5 || o.period_log2 > 31 || o.buffer_pcs < 64))
    abort(); /* accepted out of range */
  (void)cp_pcs_mode_same(s, "pcsampling");
  free(s);
  return 0;
}
