/* instrument/ptx_header.h -- the PTX reader's parser of a function header
 * (ptx_header.c), what it finds (cp_ptx_header, which every read kernel
 * holds: ptx_read.h's cp_ptx_kernel.h) and the two lexical helpers the
 * reader's files share: what an identifier character is, blank skipping.
 * The parser and the helpers are the reader's own (ptx_read.c,
 * ptx_header.c). */
#ifndef CP_INSTRUMENT_PTX_HEADER_H
#define CP_INSTRUMENT_PTX_HEADER_H

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>

static inline int cp_ptx_is_ident(int c) {
  return isalnum(c) || c == '_' || c == '$' || c == '.';
}

static inline const char *cp_ptx_skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
    p++;
  return p;
}

/* What a function header says (offsets into the reader's input). */
typedef struct cp_ptx_header {
  size_t name_off, name_len;
  size_t param_off, param_len; /* last .param's name; 0 length if none */
  int param_is_u64;            /* the last .param is a 64-bit scalar */
  uint32_t ntid[3];            /* from .reqntid / .maxntid; 0 if absent */
  int ntid_required;           /* .reqntid (exact) rather than .maxntid */
} cp_ptx_header;

/* Parses the blanked header text `h` of a function (`is_entry`: .entry,
 * else .func) that starts at byte `hstart` of the input and whose directive
 * is on line `line`, into `k` (zero it first). Errors: EPARSE naming the
 * line. */
int cp_ptx_read_header(const char *h, size_t hstart, int is_entry, uint32_t line,
                       cp_ptx_header *k);

#endif
