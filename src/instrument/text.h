/* instrument/text.h -- a growable byte buffer for building PTX (cp_text_*). */
#ifndef CP_INSTRUMENT_TEXT_H
#define CP_INSTRUMENT_TEXT_H

#include <stddef.h>

#include "core/error.h"

typedef struct cp_text {
  char *data; /* NUL-terminated when len > 0 or after cp_text_take */
  size_t len;
  size_t cap;
  int failed; /* sticky: an append ran out of memory */
} cp_text;

/* Appends `n` bytes. Returns 0, or CPROTON_ENOMEM (then `failed` sticks and
 * later appends do nothing). */
int cp_text_append(cp_text *t, const char *s, size_t n);

/* Appends a NUL-terminated string. */
int cp_text_puts(cp_text *t, const char *s);

/* Appends printf-formatted text. */
int cp_text_printf(cp_text *t, const char *fmt, ...) CP_PRINTF(2, 3);

/* Frees the buffer and resets `t` to empty. */
void cp_text_free(cp_text *t);

#endif
