/* advise_fuzz.c -- libFuzzer target for the advisor's input
 * (tools/viewer/advise*.c): the bytes are one profile, or two joined like
 * a time and a PC-sampling profile when a line "--" separates them; each
 * that parses goes through vw_advise() in text and JSON form, which must
 * never crash, whatever the profile holds (facts of the wrong type,
 * negative, NaN or huge values, unknown architectures, deep trees). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "advise.h"
#include "cproton/cproton.h"

static cproton_profile *parse(const uint8_t *data, size_t size) {
  cproton_profile *p = NULL;
  if (cproton_profile_parse((const char *)data, size, "fuzz", &p) != CPROTON_OK)
    return NULL;
  return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const cproton_profile *ps[2];
  int n = 0;
  const uint8_t *sep = NULL;
  for (size_t i = 0; i + 4 <= size && !sep; i++)
    if (!memcmp(data + i, "\n--\n", 4))
      sep = data + i;
  size_t first = sep ? (size_t)(sep - data) : size;
  if ((ps[n] = parse(data, first)))
    n++;
  if (sep && (ps[n] = parse(sep + 4, size - first - 4)))
    n++;
  FILE *out = fopen("/dev/null", "w");
  if (n && out) {
    vw_advise(ps, n, 0, out);
    vw_advise(ps, n, 1, out);
  }
  if (out)
    fclose(out);
  for (int i = 0; i < n; i++)
    cproton_profile_close((cproton_profile *)ps[i]);
  return 0;
}
