/* io/hatchet_read_json_lexer.h -- the JSON tokenizer's token kinds, its
 * lexer state and its error reporter: what the tokenizer's public header
 * (hatchet_read_json.h) and its private parts (hatchet_read_json_string.h,
 * hatchet_read_json_number.h) share. Kept apart so that those parts need
 * not include the public header (no include cycle). */
#ifndef CP_IO_HATCHET_READ_JSON_LEXER_H
#define CP_IO_HATCHET_READ_JSON_LEXER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum cp_json_tok {
  CP_JSON_EOF = 0,
  CP_JSON_LBRACE,
  CP_JSON_RBRACE,
  CP_JSON_LBRACKET,
  CP_JSON_RBRACKET,
  CP_JSON_COLON,
  CP_JSON_COMMA,
  CP_JSON_STRING,
  CP_JSON_INT,    /* integer literal that fits int64: `ival` (and `dval`) */
  CP_JSON_DOUBLE, /* any other number, NaN, Infinity: `dval` */
  CP_JSON_TRUE,
  CP_JSON_FALSE,
  CP_JSON_NULL
} cp_json_tok;

typedef struct cp_json_lexer {
  const char *name; /* for messages; not owned */
  int fd;           /* -1: memory input */
  const char *data; /* window (memory input: the whole buffer) */
  char *owned;      /* file input: the window buffer */
  size_t cap, pos, end;
  int eof;          /* no more bytes after `end` */
  uint64_t base;    /* absolute offset of data[0] */
  uint64_t line, line_start; /* current line (1-based), its start offset */
  /* the current token */
  cp_json_tok tok;
  uint64_t tok_line, tok_col;
  /* string token: str_len decoded bytes at str (no NUL inside, not
   * NUL-terminated); str points into the window for strings without
   * escapes or non-ASCII bytes, else into buf. Valid until the next token. */
  const char *str;
  size_t str_len;
  char *buf; /* decode buffer (escapes, UTF-8), NUL-terminated */
  size_t buf_len, buf_cap;
  int64_t ival;
  double dval;
} cp_json_lexer;

/* Sets the thread's error to `code` with "name:line:col: <fmt>" at the
 * current token and returns `code`. */
int cp_hatchet_read_json_error(const cp_json_lexer *lx, int code,
                               const char *fmt, ...) CP_PRINTF(3, 4);

#endif
