/* io/hatchet_read_json.h -- the bounded, position-tracking JSON tokenizer
 * under the Hatchet reader (cp_hatchet_read_json_*).
 *
 * Pull model: cp_hatchet_read_json_next() reads one token into the lexer
 * (kind, decoded string, number, start line/column). Input comes either from
 * a memory buffer or from a file descriptor read in 4 MiB windows, so a
 * 200 MB file never sits in memory whole. Limits: a string token may span at
 * most CPROTON_PROFILE_MAX_STRING raw bytes, a number 256 bytes. */
#ifndef CP_IO_HATCHET_READ_JSON_H
#define CP_IO_HATCHET_READ_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "io/hatchet_read_json_lexer.h"

/* Starts a lexer over `len` bytes at `buf` (not copied; must outlive it). */
void cp_hatchet_read_json_init_mem(cp_json_lexer *lx, const char *buf,
                                   size_t len, const char *name);

/* Starts a lexer reading the open descriptor `fd` (not closed by the lexer)
 * sequentially with read(), so pipes work. `head` (n_head <= 16 bytes,
 * copied) holds bytes the caller already read from `fd` to detect the
 * format; they come first. Returns CPROTON_OK or CPROTON_ENOMEM. */
int cp_hatchet_read_json_init_fd(cp_json_lexer *lx, int fd, const char *name,
                                 const char *head, size_t n_head);

/* Frees the lexer's buffers (not the lexer itself). */
void cp_hatchet_read_json_free(cp_json_lexer *lx);

/* Reads the next token. Returns CPROTON_OK, or EPARSE/ELIMIT/EIO/ENOMEM
 * with a "name:line:col: ..." message. At end of input tok is CP_JSON_EOF. */
int cp_hatchet_read_json_next(cp_json_lexer *lx);

/* Reads the ':' after an object key (the current token) and then the first
 * token of the value; EPARSE "expected ':'" when the colon is missing. */
int cp_hatchet_read_json_colon_value(cp_json_lexer *lx);

/* After a value inside an array or object that `close` (CP_JSON_RBRACKET or
 * CP_JSON_RBRACE) ends: reads the next token; on ',' reads the token after
 * it and returns CPROTON_OK (0); on `close` returns 1; otherwise fails with
 * EPARSE "expected ',' or ']'/'}', found ...". */
int cp_hatchet_read_json_sep(cp_json_lexer *lx, cp_json_tok close);

/* Fast path for objects: at the position just after '{' or ',', reads
 * `"key": value` followed by ',' or '}' when the key and a string value
 * are plain printable ASCII without escapes, the value is a plain integer
 * (at most 18 digits), a decimal that converts exactly without strtod, or
 * such a string, and only single spaces separate them. Returns 1 with the
 * value as the current token (tok, str, ival, dval, position), the key in
 * *key / *key_len (in the window, valid until the next token) and *last
 * set when '}' ended the object (cp_hatchet_read_json_member_end() then
 * makes that '}' the current token). Returns 0 with nothing consumed: the
 * caller goes on with cp_hatchet_read_json_next(), which reads the same
 * bytes the general way and reports any error. */
int cp_hatchet_read_json_member(cp_json_lexer *lx, const char **key,
                                size_t *key_len, int *last);

/* After a member read by cp_hatchet_read_json_member() with *last set:
 * the closing '}' becomes the current token. */
void cp_hatchet_read_json_member_end(cp_json_lexer *lx);

/* Reads the next token and fails with EPARSE unless it is `want`
 * (`what` names it in the message, e.g. "':'"). */
int cp_hatchet_read_json_expect(cp_json_lexer *lx, cp_json_tok want,
                                const char *what);

/* Skips one whole value whose first token is the current token (nested
 * arrays/objects up to 10000 deep). After it the current token is the
 * value's last token. */
int cp_hatchet_read_json_skip(cp_json_lexer *lx);

/* A short description of the current token for messages ("'}'", "string",
 * "end of file"). Static storage. */
const char *cp_hatchet_read_json_tok_name(cp_json_tok tok);

#endif
