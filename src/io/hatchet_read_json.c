/* io/hatchet_read_json.c -- JSON tokenizer for the Hatchet reader.
 *
 * Concern: turn untrusted bytes into tokens with exact positions; nothing
 * about Hatchet's schema lives here.
 * Invariant: before a token is scanned, at least LOOKAHEAD bytes (or the rest
 * of the input) sit in the window data[pos..end), so a token never straddles
 * a refill; a longer token fails with ELIMIT instead of growing memory.
 * Strings are checked to be UTF-8 (no overlongs, surrogates or NUL).
 * Not a hot path; called by io/hatchet_read.c on the opening thread.
 *
 * Window (file input):
 *   owned: [ consumed | data[pos .. end) unread | free ]   cap = 4 MiB
 *   refill: memmove the unread part to 0, read() into the free part.
 */
#include "io/hatchet_read_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cproton/profile.h"

#define WINDOW (4u << 20)
#define LOOKAHEAD (CPROTON_PROFILE_MAX_STRING + 64u)
#define MAX_NUMBER 256
#define MAX_SKIP_DEPTH 10000

void cp_hatchet_read_json_init_mem(cp_json_lexer *lx, const char *buf,
                                   size_t len, const char *name) {
  memset(lx, 0, sizeof *lx);
  lx->name = name;
  lx->fd = -1;
  lx->data = buf;
  lx->end = len;
  lx->cap = len;
  lx->eof = 1;
  lx->line = 1;
}

int cp_hatchet_read_json_init_fd(cp_json_lexer *lx, int fd, const char *name,
                                 const char *head, size_t n_head) {
  memset(lx, 0, sizeof *lx);
  lx->name = name;
  lx->fd = fd;
  lx->line = 1;
  lx->owned = malloc(WINDOW);
  if (!lx->owned)
    return cp_error_set(CPROTON_ENOMEM, "%s: out of memory", name);
  lx->data = lx->owned;
  lx->cap = WINDOW;
  if (n_head > 16)
    n_head = 16;
  memcpy(lx->owned, head, n_head);
  lx->end = n_head;
  return CPROTON_OK;
}

void cp_hatchet_read_json_free(cp_json_lexer *lx) {
  free(lx->owned);
  free(lx->buf);
  lx->owned = NULL;
  lx->buf = NULL;
  lx->str = NULL;
}

int cp_hatchet_read_json_error(const cp_json_lexer *lx, int code,
                               const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return cp_error_set(code, "%s:%llu:%llu: %s", lx->name,
                      (unsigned long long)lx->tok_line,
                      (unsigned long long)lx->tok_col, what);
}

const char *cp_hatchet_read_json_tok_name(cp_json_tok tok) {
  static const char *const names[] = {
      "end of file", "'{'",    "'}'",    "'['",    "']'",   "':'", "','",
      "string",      "number", "number", "'true'", "'false'", "'null'"};
  return (unsigned)tok < sizeof names / sizeof names[0] ? names[tok] : "?";
}

/* Moves the unread bytes to the front and reads more (file input only). */
static int refill(cp_json_lexer *lx) {
  if (lx->eof)
    return CPROTON_OK;
  if (lx->base + lx->end >= CPROTON_PROFILE_MAX_BYTES)
    return cp_error_set(CPROTON_ELIMIT, "%s: input longer than %llu bytes (an "
                        "endless stream?)", lx->name,
                        (unsigned long long)CPROTON_PROFILE_MAX_BYTES);
  size_t keep = lx->end - lx->pos;
  memmove(lx->owned, lx->owned + lx->pos, keep);
  lx->base += lx->pos;
  lx->pos = 0;
  lx->end = keep;
  while (lx->end < lx->cap) {
    ssize_t got = read(lx->fd, lx->owned + lx->end, lx->cap - lx->end);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return cp_error_set(CPROTON_EIO, "%s: read failed: %s", lx->name,
                          strerror(errno));
    if (got == 0) {
      lx->eof = 1;
      break;
    }
    lx->end += (size_t)got;
  }
  return CPROTON_OK;
}

/* Skips whitespace (refilling as needed), then guarantees the lookahead. */
static int skip_space(cp_json_lexer *lx) {
  if (lx->pos + 1 < lx->end && lx->data[lx->pos] == ' ' &&
      (unsigned char)lx->data[lx->pos + 1] > ' ')
    lx->pos++; /* the common ": value" / ", key" case */
  for (;;) {
    while (lx->pos < lx->end) {
      char c = lx->data[lx->pos];
      if (c == '\n') {
        lx->line++;
        lx->line_start = lx->base + lx->pos + 1;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        break;
      }
      lx->pos++;
    }
    if (lx->pos < lx->end || lx->eof)
      break;
    int rc = refill(lx);
    if (rc)
      return rc;
  }
  if (lx->end - lx->pos < LOOKAHEAD && !lx->eof)
    return refill(lx);
  return CPROTON_OK;
}

static int str_push(cp_json_lexer *lx, const char *s, size_t n) {
  if (lx->buf_len + n + 1 > lx->buf_cap) {
    size_t cap = lx->buf_cap ? lx->buf_cap : 256;
    while (cap < lx->buf_len + n + 1)
      cap *= 2;
    char *p = realloc(lx->buf, cap);
    if (!p)
      return cp_hatchet_read_json_error(lx, CPROTON_ENOMEM, "out of memory");
    lx->buf = p;
    lx->buf_cap = cap;
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

static int lex_word(cp_json_lexer *lx, const char *word, cp_json_tok tok) {
  size_t n = strlen(word);
  if (lx->end - lx->pos < n || memcmp(lx->data + lx->pos, word, n))
    return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                      "invalid literal (expected a JSON value)");
  lx->pos += n;
  lx->tok = tok;
  return CPROTON_OK;
}

/* Checks the JSON number grammar over s[0..n); returns its length and
 * whether it is a plain integer. */
static size_t number_span(const char *s, size_t n, int *is_int) {
  size_t i = 0;
  *is_int = 1;
  if (i < n && s[i] == '-')
    i++;
  if (i < n && s[i] == '0')
    i++;
  else if (i < n && s[i] >= '1' && s[i] <= '9')
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
  else
    return 0;
  if (i < n && s[i] == '.') {
    *is_int = 0;
    if (++i >= n || s[i] < '0' || s[i] > '9')
      return 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    *is_int = 0;
    if (++i < n && (s[i] == '+' || s[i] == '-'))
      i++;
    if (i >= n || s[i] < '0' || s[i] > '9')
      return 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
  }
  return i;
}

static int special_number(cp_json_lexer *lx) {
  static const struct { const char *w; double v; } words[] = {
      {"NaN", NAN}, {"Infinity", INFINITY}, {"-Infinity", -INFINITY}};
  for (size_t k = 0; k < 3; k++) {
    size_t n = strlen(words[k].w);
    if (lx->end - lx->pos >= n && !memcmp(lx->data + lx->pos, words[k].w, n)) {
      lx->pos += n;
      lx->tok = CP_JSON_DOUBLE;
      lx->dval = words[k].v;
      return CPROTON_OK;
    }
  }
  return cp_hatchet_read_json_error(lx, CPROTON_EPARSE, "invalid number");
}

/* Clinger's fast path: digits d[0..n) with the decimal point `frac`
 * digits from the end and exponent `e10`, when the mantissa and the power
 * of ten are exact doubles, so one IEEE operation rounds exactly as strtod
 * does. Returns 0 when the number needs strtod. */
static int fast_double(const char *s, size_t n, double *out) {
  static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,
                                 1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17,
                                 1e18, 1e19, 1e20, 1e21, 1e22};
  size_t i = s[0] == '-';
  uint64_t mant = 0;
  int digits = 0, frac = 0, e10 = 0, in_frac = 0;
  for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
    if (s[i] == '.') {
      in_frac = 1;
      continue;
    }
    if (mant == 0 && s[i] == '0') { /* leading zeros carry no digits */
      frac += in_frac;
      continue;
    }
    if (++digits > 15)
      return 0;
    mant = mant * 10 + (uint64_t)(s[i] - '0');
    frac += in_frac;
  }
  if (i < n) { /* exponent: grammar already checked */
    int neg = s[++i] == '-', v = 0;
    i += s[i] == '-' || s[i] == '+';
    for (; i < n; i++)
      if ((v = v * 10 + (s[i] - '0')) > 1000)
        return 0;
    e10 = neg ? -v : v;
  }
  e10 -= frac;
  if (e10 < -22 || e10 > 22)
    return 0;
  double d = (double)mant;
  d = e10 < 0 ? d / pow10[-e10] : d * pow10[e10];
  *out = s[0] == '-' ? -d : d;
  return 1;
}

/* A plain integer of at most 18 digits at s[0..avail) (the common metric
 * value); returns its length, or 0 when lex_number's general path must
 * look at it. */
static size_t plain_int(const char *s, size_t avail, int64_t *out) {
  size_t i = s[0] == '-', start = i;
  int64_t v = 0;
  while (i < avail && s[i] >= '0' && s[i] <= '9') {
    if (i - start == 18) /* a 19th digit may overflow: the general path */
      return 0;
    v = v * 10 + (s[i++] - '0');
  }
  size_t digits = i - start;
  if (digits == 0 || (digits > 1 && s[start] == '0'))
    return 0;
  if (i < avail && (s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                    (s[i] >= '0' && s[i] <= '9')))
    return 0;
  *out = start ? -v : v;
  return i;
}

static int lex_number(cp_json_lexer *lx) {
  const char *s = lx->data + lx->pos;
  size_t avail = lx->end - lx->pos;
  size_t n = plain_int(s, avail, &lx->ival);
  if (n) {
    lx->pos += n;
    lx->dval = (double)lx->ival;
    lx->tok = CP_JSON_INT;
    return CPROTON_OK;
  }
  int is_int;
  n = number_span(s, avail < MAX_NUMBER + 1 ? avail : MAX_NUMBER + 1,
                  &is_int);
  if (n == 0)
    return special_number(lx);
  if (n > MAX_NUMBER)
    return cp_hatchet_read_json_error(lx, CPROTON_ELIMIT,
                                      "number longer than %d characters",
                                      MAX_NUMBER);
  lx->pos += n;
  if (is_int && n <= 18) { /* fits int64 without overflow checks */
    size_t i = s[0] == '-';
    int64_t v = 0;
    for (; i < n; i++)
      v = v * 10 + (s[i] - '0');
    lx->ival = s[0] == '-' ? -v : v;
    lx->dval = (double)lx->ival;
    lx->tok = CP_JSON_INT;
    return CPROTON_OK;
  }
  if (!is_int && fast_double(s, n, &lx->dval)) {
    lx->tok = CP_JSON_DOUBLE;
    return CPROTON_OK;
  }
  char tmp[MAX_NUMBER + 1];
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  if (is_int) {
    errno = 0;
    long long v = strtoll(tmp, NULL, 10);
    if (errno == 0) {
      lx->tok = CP_JSON_INT;
      lx->ival = v;
      lx->dval = (double)v;
      return CPROTON_OK;
    }
  }
  lx->dval = strtod(tmp, NULL);
  lx->tok = CP_JSON_DOUBLE;
  if (isinf(lx->dval))
    return cp_hatchet_read_json_error(lx, CPROTON_ELIMIT,
                                      "number out of range: %.40s", tmp);
  return CPROTON_OK;
}

/* A token that is not punctuation: string, number or literal at pos. */
static __attribute__((noinline)) int lex_value(cp_json_lexer *lx) {
  char c = lx->data[lx->pos];
  if (c == '"')
    return lex_string(lx);
  if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I')
    return lex_number(lx);
  if (c == 't')
    return lex_word(lx, "true", CP_JSON_TRUE);
  if (c == 'f')
    return lex_word(lx, "false", CP_JSON_FALSE);
  if (c == 'n')
    return lex_word(lx, "null", CP_JSON_NULL);
  return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                    "unexpected character 0x%02x",
                                    (unsigned char)c);
}

/* Token kinds of the one-byte tokens, CP_JSON_EOF for every other byte. */
static const unsigned char punct[256] = {
    ['{'] = CP_JSON_LBRACE,   ['}'] = CP_JSON_RBRACE, ['['] = CP_JSON_LBRACKET,
    [']'] = CP_JSON_RBRACKET, [':'] = CP_JSON_COLON,  [','] = CP_JSON_COMMA};

/* Skips whitespace and reads the token at pos; the window holds the
 * lookahead (or the rest of the input). */
static int lex_token(cp_json_lexer *lx) {
  const char *d = lx->data;
  size_t pos = lx->pos, end = lx->end;
  if (pos + 1 < end && d[pos] == ' ' && (unsigned char)d[pos + 1] > ' ')
    pos++; /* the common ": value" / ", key" */
  for (; pos < end && (unsigned char)d[pos] <= ' '; pos++) {
    char c = d[pos];
    if (c == '\n') {
      lx->line++;
      lx->line_start = lx->base + pos + 1;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      break;
    }
  }
  lx->pos = pos;
  if (!lx->eof && end - pos < LOOKAHEAD) { /* a long run of whitespace */
    int rc = skip_space(lx);
    if (rc)
      return rc;
    return lex_token(lx);
  }
  lx->tok_line = lx->line;
  lx->tok_col = lx->base + pos - lx->line_start + 1;
  if (pos >= end) {
    lx->tok = CP_JSON_EOF;
    return CPROTON_OK;
  }
  cp_json_tok t = (cp_json_tok)punct[(unsigned char)d[pos]];
  if (t == CP_JSON_EOF)
    return lex_value(lx);
  lx->pos = pos + 1;
  lx->tok = t;
  return CPROTON_OK;
}

int cp_hatchet_read_json_next(cp_json_lexer *lx) { return lex_token(lx); }

int cp_hatchet_read_json_colon_value(cp_json_lexer *lx) {
  if (lx->pos < lx->end && lx->data[lx->pos] == ':') { /* "key": value */
    lx->pos++;
    return lex_token(lx);
  }
  int rc = cp_hatchet_read_json_expect(lx, CP_JSON_COLON, "':'");
  return rc ? rc : lex_token(lx);
}

int cp_hatchet_read_json_sep(cp_json_lexer *lx, cp_json_tok close) {
  int rc = lex_token(lx);
  if (rc)
    return rc;
  if (lx->tok == CP_JSON_COMMA)
    return lex_token(lx);
  if (lx->tok == close)
    return 1;
  return cp_hatchet_read_json_error(
      lx, CPROTON_EPARSE, "expected ',' or '%c', found %s%s",
      close == CP_JSON_RBRACE ? '}' : ']', cp_hatchet_read_json_tok_name(lx->tok),
      lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
}

/* Length of the plain string whose opening quote is at p, or -1 when it
 * is not one (escapes, non-ASCII, too long, not closed in [p, end)). */
static ptrdiff_t plain_string(const char *p, const char *end) {
  const char *limit = end - p - 1 > (ptrdiff_t)CPROTON_PROFILE_MAX_STRING
                          ? p + 1 + CPROTON_PROFILE_MAX_STRING
                          : end;
  size_t run = plain_run(p + 1, limit);
  if (p + 1 + run >= limit || p[1 + run] != '"')
    return -1;
  return (ptrdiff_t)run;
}

/* The value of a fast member at p as the current token; returns the byte
 * after it or NULL (the lexer's position is left alone). */
static const char *member_value(cp_json_lexer *lx, const char *p,
                                const char *end) {
  if (*p == '"') {
    ptrdiff_t run = plain_string(p, end);
    if (run < 0)
      return NULL;
    lx->tok = CP_JSON_STRING, lx->str = p + 1, lx->str_len = (size_t)run;
    return p + run + 2;
  }
  if (*p != '-' && (*p < '0' || *p > '9'))
    return NULL;
  size_t avail = (size_t)(end - p), n = plain_int(p, avail, &lx->ival);
  if (n) {
    lx->tok = CP_JSON_INT, lx->dval = (double)lx->ival;
    return p + n;
  }
  int is_int;
  n = number_span(p, avail < MAX_NUMBER + 1 ? avail : MAX_NUMBER + 1, &is_int);
  if (n == 0 || n > MAX_NUMBER || is_int || !fast_double(p, n, &lx->dval))
    return NULL;
  lx->tok = CP_JSON_DOUBLE;
  return p + n;
}

int cp_hatchet_read_json_member(cp_json_lexer *lx, const char **key,
                                size_t *key_len, int *last) {
  if (!lx->eof && lx->end - lx->pos < LOOKAHEAD)
    return 0; /* near a refill: the token path handles it */
  const char *d = lx->data, *end = d + lx->end, *p = d + lx->pos, *v;
  if (p < end && *p == ' ')
    p++;
  ptrdiff_t run = p < end && *p == '"' ? plain_string(p, end) : -1;
  if (run < 0)
    return 0;
  const char *k = p + 1;
  p += run + 2;
  if (p >= end || *p++ != ':')
    return 0;
  if (p < end && *p == ' ')
    p++;
  if (p >= end || !(v = member_value(lx, p, end)) || v >= end ||
      (*v != ',' && *v != '}'))
    return 0;
  *key = k, *key_len = (size_t)run;
  *last = *v == '}';
  lx->tok_line = lx->line;
  lx->tok_col = lx->base + (size_t)(p - d) - lx->line_start + 1;
  lx->pos = (size_t)(v + 1 - d);
  return 1;
}

void cp_hatchet_read_json_member_end(cp_json_lexer *lx) {
  lx->tok = CP_JSON_RBRACE;
  lx->tok_col = lx->base + lx->pos - 1 - lx->line_start + 1;
}

int cp_hatchet_read_json_expect(cp_json_lexer *lx, cp_json_tok want,
                                const char *what) {
  int rc = cp_hatchet_read_json_next(lx);
  if (rc)
    return rc;
  if (lx->tok != want)
    return cp_hatchet_read_json_error(
        lx, CPROTON_EPARSE, "expected %s, found %s%s", what,
        cp_hatchet_read_json_tok_name(lx->tok),
        lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
  return CPROTON_OK;
}

/* Inside an object: the current token must be a key; reads it, the ':'
 * and the first token of the value. */
static int object_key(cp_json_lexer *lx) {
  if (lx->tok != CP_JSON_STRING)
    return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                      "expected a string key, found %s",
                                      cp_hatchet_read_json_tok_name(lx->tok));
  int rc = cp_hatchet_read_json_expect(lx, CP_JSON_COLON, "':'");
  return rc ? rc : cp_hatchet_read_json_next(lx);
}

#define KIND_GET(k, d) (((k)[(d) >> 3] >> ((d)&7)) & 1)
#define KIND_SET(k, d, v)                                                      \
  ((k)[(d) >> 3] = (unsigned char)(((k)[(d) >> 3] & ~(1u << ((d)&7))) |        \
                                   ((unsigned)(v) << ((d)&7))))

/* After a complete value: closes containers until a ',' continues one.
 * Returns 1 when the outermost value is done, 0 to continue, <0 on error. */
static int after_value(cp_json_lexer *lx, unsigned char *kinds, int *depth) {
  while (*depth > 0) {
    int rc = cp_hatchet_read_json_next(lx);
    if (rc)
      return rc;
    int is_obj = KIND_GET(kinds, *depth - 1);
    if (lx->tok == (is_obj ? CP_JSON_RBRACE : CP_JSON_RBRACKET)) {
      (*depth)--;
      continue;
    }
    if (lx->tok != CP_JSON_COMMA)
      return cp_hatchet_read_json_error(
          lx, CPROTON_EPARSE, "expected ',' or '%c', found %s",
          is_obj ? '}' : ']', cp_hatchet_read_json_tok_name(lx->tok));
    if ((rc = cp_hatchet_read_json_next(lx)))
      return rc;
    return is_obj ? object_key(lx) : CPROTON_OK;
  }
  return 1;
}

/* Iterative skip; `kinds` is a bit stack (1 = object) of open containers. */
int cp_hatchet_read_json_skip(cp_json_lexer *lx) {
  unsigned char kinds[MAX_SKIP_DEPTH / 8 + 1];
  int depth = 0, rc;
  for (;;) {
    cp_json_tok t = lx->tok;
    if (t == CP_JSON_LBRACE || t == CP_JSON_LBRACKET) {
      if (depth >= MAX_SKIP_DEPTH)
        return cp_hatchet_read_json_error(lx, CPROTON_ELIMIT,
                                          "nesting deeper than %d",
                                          MAX_SKIP_DEPTH);
      KIND_SET(kinds, depth, t == CP_JSON_LBRACE);
      depth++;
      if ((rc = cp_hatchet_read_json_next(lx)))
        return rc;
      if (lx->tok == (t == CP_JSON_LBRACE ? CP_JSON_RBRACE : CP_JSON_RBRACKET))
        depth--;
      else if ((rc = t == CP_JSON_LBRACE ? object_key(lx) : 0) != 0)
        return rc;
      else
        continue;
    } else if (t == CP_JSON_EOF || t == CP_JSON_RBRACE ||
               t == CP_JSON_RBRACKET || t == CP_JSON_COLON ||
               t == CP_JSON_COMMA) {
      return cp_hatchet_read_json_error(
          lx, CPROTON_EPARSE, "expected a value, found %s%s",
          cp_hatchet_read_json_tok_name(t),
          t == CP_JSON_EOF ? " (truncated file?)" : "");
    }
    rc = after_value(lx, kinds, &depth);
    if (rc < 0)
      return rc;
    if (rc == 1)
      return CPROTON_OK;
  }
}
