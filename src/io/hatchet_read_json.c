/* io/hatchet_read_json.c -- JSON tokenizer for the Hatchet reader.
 *
 * Concern: turn untrusted bytes into tokens with exact positions; nothing
 * about Hatchet's schema lives here.
 * Invariant: before a token is scanned, at least LOOKAHEAD bytes (or the rest
 * of the input) sit in the window data[pos..end), so a token never straddles
 * a refill; a longer token fails with ELIMIT instead of growing memory.
 * Strings are checked to be UTF-8 (no overlongs, surrogates or NUL).
 * Not a hot path; called by io/hatchet_read.c on the opening thread.
 * Here: the window and its refills, whitespace, punctuation, literals, the
 * member fast path and skipping; strings are in hatchet_read_json_string.h
 * and numbers in hatchet_read_json_number.h (included here once, static, so
 * that their hot functions inline as before), the lexer state in
 * hatchet_read_json_lexer.h.
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

#include "core/check.h"
#include "cproton/profile.h"
#include "io/hatchet_read_json_number.h"
#include "io/hatchet_read_json_string.h"

#define WINDOW (4u << 20)
#define LOOKAHEAD (CPROTON_PROFILE_MAX_STRING + 64u)
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

static int lex_word(cp_json_lexer *lx, const char *word, cp_json_tok tok) {
  size_t n = strlen(word);
  if (lx->end - lx->pos < n || memcmp(lx->data + lx->pos, word, n))
    return cp_hatchet_read_json_error(lx, CPROTON_EPARSE,
                                      "invalid literal (expected a JSON value)");
  lx->pos += n;
  lx->tok = tok;
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
  CP_ASSERT(lx->eof || end - pos >= LOOKAHEAD);
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
