/* hatchet_read_fuzz.c -- libFuzzer target for the Hatchet reader: parse
 * arbitrary bytes through the public API and touch every accessor. */
#include <stddef.h>
#include <stdint.h>

#include "cproton/cproton.h"
#include "profile_touch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cproton_profile *p = NULL;
  if (cproton_profile_parse((const char *)data, size, "fuzz", &p) != CPROTON_OK)
    return 0;
  cpf_touch_profile(p);
  cproton_profile_close(p);
  return 0;
}
