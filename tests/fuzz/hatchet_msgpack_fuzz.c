/* hatchet_msgpack_fuzz.c -- libFuzzer target for the Hatchet MessagePack
 * reader: arbitrary bytes behind a fixarray(2) header (so every input takes
 * the MessagePack path of cproton_profile_parse), then every accessor. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"
#include "profile_touch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int framed = size > 0 && (data[0] == 0x91 || data[0] == 0x92);
  uint8_t *buf = malloc(size + 1);
  if (!buf)
    return 0;
  buf[0] = 0x92;
  memcpy(buf + !framed, data, size);
  cproton_profile *p = NULL;
  if (cproton_profile_parse((const char *)buf, size + !framed, "fuzz", &p) ==
      CPROTON_OK) {
    cpf_touch_profile(p);
    cproton_profile_close(p);
  }
  free(buf);
  return 0;
}
