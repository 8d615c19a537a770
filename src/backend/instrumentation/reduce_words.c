/* backend/instrumentation/reduce_words.c -- the device reduction's result
 * words from a host decode, and their comparison: the host decoder is the
 * reference, and CPROTON_INSTR_REDUCE_CHECK runs both on one buffer and
 * diffs them word by word. Not a hot path. */
#include <stdio.h>

#include "backend/instrumentation/decode.h"
#include "backend/instrumentation/reduce.h"
#include "instrument/layout.h"

size_t cp_reduce_n_words(uint32_t n_scopes) { return cp_layout_sum_words(n_scopes); }

void cp_reduce_words_of(const cproton_decoded *d, uint64_t *w) {
  size_t n = cproton_decoded_n_scopes(d);
  for (size_t i = 0; i < cp_reduce_n_words((uint32_t)n); i++)
    w[i] = 0;
  w[CP_REDUCE_CTAS] = cproton_decoded_n_ctas(d);
  w[CP_REDUCE_BAD_CTAS] = cproton_decoded_n_bad_ctas(d);
  w[CP_REDUCE_DROPPED] = cproton_decoded_n_dropped(d);
  w[CP_REDUCE_UNPAIRED] = cproton_decoded_n_unpaired(d);
  cp_decoded_clock(d, &w[CP_REDUCE_CLOCK_CYCLES], &w[CP_REDUCE_CLOCK_NS]);
  for (size_t i = 0; i < n; i++) {
    cproton_decoded_scope s;
    cproton_decoded_get_scope(d, i, &s);
    w[CP_REDUCE_FIXED + i] = s.cycles;
    w[CP_REDUCE_FIXED + n + i] = s.count;
    w[CP_REDUCE_FIXED + 2 * n + i] = s.unpaired;
  }
}

static const char *const fixed_names[CP_REDUCE_FIXED] = {"good CTAs", "bad CTAs", "dropped records", "unpaired records",
                                                         "clock cycles", "clock ns", "reserved", "reserved"};
static const char *const scope_fields[3] = {"cycles", "count", "unpaired"};

/* Names word `i` into `msg`. */
static void name_word(size_t i, const cproton_buffer_layout *l, char *msg, size_t cap, uint64_t dev, uint64_t host) {
  if (i < CP_REDUCE_FIXED) {
    snprintf(msg, cap, "%s: device %llu, host %llu", fixed_names[i], (unsigned long long)dev,
             (unsigned long long)host);
    return;
  }
  size_t k = i - CP_REDUCE_FIXED, scope = k % l->n_scopes;
  const char *name = l->scope_names && l->scope_names[scope] ? l->scope_names[scope] : "?";
  snprintf(msg, cap, "scope %zu (%s) %s: device %llu, host %llu", scope, name, scope_fields[k / l->n_scopes],
           (unsigned long long)dev, (unsigned long long)host);
}

size_t cp_reduce_diff(const uint64_t *dev, const uint64_t *host, const cproton_buffer_layout *layout, char *msg,
                      size_t cap) {
  size_t bad = 0;
  if (cap)
    msg[0] = '\0';
  for (size_t i = 0; i < cp_reduce_n_words(layout->n_scopes); i++)
    if (dev[i] != host[i] && bad++ == 0 && cap)
      name_word(i, layout, msg, cap, dev[i], host[i]);
  return bad;
}
