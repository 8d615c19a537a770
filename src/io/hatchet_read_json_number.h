/* io/hatchet_read_json_number.h -- the JSON tokenizer's numbers: the JSON
 * grammar checked, plain integers of up to 18 digits read directly, other
 * numbers through Clinger's fast path when it is exact and strtod/strtoll
 * otherwise, NaN and +-Infinity (which Python's json writes) accepted.
 *
 * Private to io/hatchet_read_json.c, which includes it once: its functions
 * are static so that the compiler inlines the hot ones (plain_int,
 * number_span, fast_double) into the tokenizer and its member fast path,
 * as when they were one file. Limit: a number of more than MAX_NUMBER
 * characters fails with ELIMIT; one out of a double's range with ELIMIT.
 * Speed matters: every metric value of a profile is read here. */
#ifndef CP_IO_HATCHET_READ_JSON_NUMBER_H
#define CP_IO_HATCHET_READ_JSON_NUMBER_H

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/hatchet_read_json_lexer.h"

#define MAX_NUMBER 256

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

#endif
