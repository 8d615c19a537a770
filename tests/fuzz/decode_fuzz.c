/* decode_fuzz.c -- libFuzzer target for the profile-buffer decoder: the
 * first 8 bytes choose a layout (units, segment size, counter, scopes), the
 * rest is the buffer, trimmed to whole CTA slices (byte 4, bit 0: scopes
 * 1 and 3 are events, paired across units). Every flag combination
 * runs (bad CTAs skipped, aggregate only, time_shift), then the Proton
 * host-buffer encoder on the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"

static uint32_t header_bytes(uint32_t units) { return (64u + 4u * units + 15u) & ~15u; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const names[] = {"a", "b", "c", "d"};
  static const int32_t parents[] = {-1, 0, 0, 1};
  static const int32_t with_events[] = {-1, CPROTON_SCOPE_PARENT_EVENT, 0, CPROTON_SCOPE_PARENT_EVENT};
  if (size < 8)
    return 0;
  cproton_buffer_layout l;
  memset(&l, 0, sizeof l);
  l.n_units = 1u + data[0] % 4u;
  l.segment_bytes = 16u << (data[1] % 4u);
  l.counter = data[2] % 3u;
  l.n_scopes = data[3] % 5u;
  l.scope_names = names;
  l.scope_parents = data[4] & 1 ? with_events : parents;
  l.header_bytes = header_bytes(l.n_units);
  l.per_cta_bytes = l.header_bytes + l.n_units * l.segment_bytes;
  for (uint32_t u = 0; u < l.n_units; u++)
    l.unit_warp[u] = (uint8_t)u;
  data += 8;
  size -= 8;
  size_t n = size - size % l.per_cta_bytes;
  if (!n)
    return 0;
  for (unsigned flags = 0; flags < 8; flags++) {
    cproton_decoded *d = NULL;
    if (cproton_buffer_decode(data, n, &l, flags, &d) == CPROTON_OK) {
      uint64_t listed = 0, counted = 0;
      for (size_t i = 0; i < cproton_decoded_n_warps(d); i++) {
        cproton_decoded_warp w;
        cproton_decoded_get_warp(d, i, &w);
        listed += w.n_events;
        for (size_t e = 0; e < w.n_events; e++)
          if (w.events[e].scope >= l.n_scopes)
            abort();
      }
      for (size_t i = 0; i < cproton_decoded_n_scopes(d); i++) {
        cproton_decoded_scope sc;
        cproton_decoded_get_scope(d, i, &sc);
        counted += sc.count;
      }
      if (!(flags & CPROTON_DECODE_NO_EVENTS) && listed != counted)
        abort(); /* every paired occurrence is listed once, on one warp */
    }
    cproton_decoded_free(d);
  }
  void *enc = NULL;
  size_t enc_size = 0;
  if (cproton_buffer_to_proton(data, n, &l, 4, &enc, &enc_size) == CPROTON_OK && enc_size < n / l.per_cta_bytes)
    abort(); /* at least one block per CTA */
  cproton_free(enc);
  return 0;
}
