/* instrument/text.c -- growable byte buffer used to build instrumented PTX.
 *
 * Invariant: data[len] == '\0' whenever data != NULL; `failed` is sticky so
 * callers may check once at the end. Not a hot path; called by the pass. */
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/grow.h"
#include "instrument/text.h"

static int grow(cp_text *t, size_t need) {
  if (t->failed)
    return CPROTON_ENOMEM;
  void *p;
  if (need > SIZE_MAX - 1 - t->len || cp_grow(t->data, &t->cap, t->len + need + 1, 1, 256, &p)) {
    t->failed = 1;
    return CPROTON_ENOMEM;
  }
  t->data = p;
  return 0;
}

int cp_text_append(cp_text *t, const char *s, size_t n) {
  CP_ASSERT(!t->data || t->data[t->len] == '\0');
  if (grow(t, n))
    return CPROTON_ENOMEM;
  if (n)
    memcpy(t->data + t->len, s, n);
  t->len += n;
  t->data[t->len] = '\0';
  return 0;
}

int cp_text_puts(cp_text *t, const char *s) {
  return cp_text_append(t, s, strlen(s));
}

int cp_text_printf(cp_text *t, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return CPROTON_EINVAL;
  if ((size_t)n < sizeof small)
    return cp_text_append(t, small, (size_t)n);
  if (grow(t, (size_t)n))
    return CPROTON_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
  return 0;
}

void cp_text_free(cp_text *t) {
  free(t->data);
  memset(t, 0, sizeof *t);
}
