/* io/hatchet_read_json_string.h -- the JSON tokenizer's strings: a string
 * token scanned eight bytes at a time, kept in the window when it has no
 * escapes or non-ASCII bytes, else decoded into the lexer's buffer
 * (escapes, \u pairs, UTF-8 checked: no overlongs, surrogates or NUL).
 *
 * Private to io/hatchet_read_json.c, which includes it once: its functions
 * are static so that the compiler inlines the hot ones (plain_run,
 * lex_string) into the tokenizer as when they were one file. Invariant
 * (the tokenizer's): at least LOOKAHEAD bytes or the rest of the input sit
 * in the window before a token is scanned, so a string longer than
 * CPROTON_PROFILE_MAX_STRING fails with ELIMIT rather than straddling a
 * refill. Speed matters: every key and name of a profile is read here. */
#ifndef CP_IO_HATCHET_READ_JSON_STRING_H
#define CP_IO_HATCHET_READ_JSON_STRING_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "cproton/profile.h"
#include "io/hatchet_read_json_lexer.h"

static int str_push(cp_json_lexer *lx, const char *s, size_t n) {
  if (lx->buf_len + n + 1 > lx->buf_cap) {
    void *p;
    if (cp_grow(lx->buf, &lx->buf_cap, lx->buf_len + n + 1, 1, 256, &p))
      return cp_hatchet_read_json_error(lx, CPROTON_ENOMEM, "out of memory");
    lx->buf = p;
  }
  memcpy(lx->buf + lx->buf_len, s, n);
  lx->buf_len += n;
  lx->buf[lx->buf_len] = '\0';
  return CPROTON_OK;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4, min = 0x10000;
  else
    return 0;
  if (n < len)
    return 0;
  unsigned cp = c & (0x7Fu >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (unsigned)(c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

static int put_codepoint(cp_json_lexer *lx, unsigned cp) {
  char b[4];
  size_t n;
  if (cp < 0x80)
    b[0] = (char)cp, n = 1;
  else if (cp < 0x800)
    b[0] = (char)(0xC0 | (cp >> 6)), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  else if (cp < 0x10000)
    b[0] = (char)(0xE0 | (cp >> 12)), b[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
    b[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  else
    b[0] = (char)(0xF0 | (cp >> 18)), b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
    b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)),
    b[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  return str_push(lx, b, n);
}

/* Decodes "\uXXXX" (and a following low surrogate) at p; returns bytes used
 * after the backslash-u, or -1. Lone surrogates become U+FFFD. */
static int unicode_escape(cp_json_lexer *lx, const char *p, const char *end) {
  unsigned cp, lo;
  if (end - p < 4 || hex4(p, &cp))
    return -1;
  if (cp == 0)
    return -1;
  if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 10 && p[4] == '\\' &&
      p[5] == 'u' && !hex4(p + 6, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
    if (put_codepoint(lx, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)))
      return -2;
    return 10;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF)
    cp = 0xFFFD;
  return put_codepoint(lx, cp) ? -2 : 4;
}

static int escape(cp_json_lexer *lx, const char *p, const char *end,
                  int *used) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  const char *hit = p < end && *p ? strchr(from, *p) : NULL;
  if (hit) {
    *used = 1;
    return str_push(lx, &to[hit - from], 1);
  }
  if (p < end && *p == 'u') {
    int n = unicode_escape(lx, p + 1, end);
    if (n == -2)
      return CPROTON_ENOMEM;
    if (n < 0)
      return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                        "bad \\u escape in string");
    *used = 1 + n;
    return CPROTON_OK;
  }
  return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                    "bad escape in string");
}

/* Nonzero in the high bit of each byte of `w` that is '"', '\\', a
 * control character (< 0x20) or non-ASCII (>= 0x80): bytes that need the
 * careful path. The test is exact for "some byte is special"; flags above
 * the first special byte may be spurious, which is why callers only use the
 * lowest one. */
static inline uint64_t special_bytes(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) |
          w) &
         high;
}

/* Length of the run of plain bytes (printable ASCII other than '"' and
 * '\\') at p[0..limit - p), eight bytes at a time. */
static size_t plain_run(const char *p, const char *limit) {
  const char *s = p;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  while (limit - s >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    uint64_t m = special_bytes(w);
    if (m)
      return (size_t)(s - p) + (size_t)(__builtin_ctzll(m) >> 3);
    s += 8;
  }
#endif
  while (s < limit && *s != '"' && *s != '\\' && (unsigned char)*s >= 0x20 &&
         (unsigned char)*s < 0x80)
    s++;
  return (size_t)(s - p);
}

/* The slow part of a string: escapes, UTF-8 and errors at p. Returns
 * CPROTON_OK with *p advanced, 1 at the closing quote, or an error. */
static int string_special(cp_json_lexer *lx, const char **p,
                          const char *limit, const char *end) {
  if (*p >= limit)
    return cp_hatchet_read_json_error(
        lx, limit == end ? CPROTON_EPARSE : CPROTON_ELIMIT,
        limit == end ? "unterminated string (truncated file?)"
                     : "string longer than %u bytes",
        CPROTON_PROFILE_MAX_STRING);
  unsigned char c = (unsigned char)**p;
  if (c == '"')
    return 1;
  if (c < 0x20)
    return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                      "control character in string");
  int rc;
  if (c == '\\') {
    int used = 0;
    if ((rc = escape(lx, *p + 1, limit, &used)))
      return rc;
    *p += 1 + used;
    return CPROTON_OK;
  }
  size_t n = utf8_len((const unsigned char *)*p, (size_t)(limit - *p));
  if (!n)
    return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                      "invalid UTF-8 in string");
  rc = str_push(lx, *p, n);
  *p += n;
  return rc;
}

/* Scans a string token; data[pos] is the opening quote. Plain runs are
 * found a word at a time and copied with one memcpy. */
static int lex_string(cp_json_lexer *lx) {
  const char *p = lx->data + lx->pos + 1, *end = lx->data + lx->end;
  /* At most CPROTON_PROFILE_MAX_STRING bytes between the quotes, exactly:
   * the closing quote may sit at p + MAX_STRING, no later. */
  const char *limit = end - p > (ptrdiff_t)CPROTON_PROFILE_MAX_STRING
                          ? p + CPROTON_PROFILE_MAX_STRING + 1
                          : end;
  size_t run = plain_run(p, limit);
  if (p + run < limit && p[run] == '"') { /* the common case: no copy */
    lx->str = p;
    lx->str_len = run;
    lx->pos = (size_t)(p + run + 1 - lx->data);
    lx->tok = CP_JSON_STRING;
    return CPROTON_OK;
  }
  lx->buf_len = 0;
  int rc = str_push(lx, "", 0);
  while (!rc) {
    run = plain_run(p, limit);
    if (run && (rc = str_push(lx, p, run)))
      return rc;
    p += run;
    rc = string_special(lx, &p, limit, end);
    if (rc == 1) {
      lx->str = lx->buf;
      lx->str_len = lx->buf_len;
      lx->pos = (size_t)(p + 1 - lx->data);
      lx->tok = CP_JSON_STRING;
      return CPROTON_OK;
    }
  }
  return rc;
}

#endif
