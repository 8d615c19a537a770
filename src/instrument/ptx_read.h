/* instrument/ptx_read.h -- the PTX reader of the pass (cp_ptx_read_*): finds
 * kernel entries, their last parameter and launch bounds, the record markers
 * and the exits, as byte offsets into the caller's text. */
#ifndef CP_INSTRUMENT_PTX_READ_H
#define CP_INSTRUMENT_PTX_READ_H

#include <stddef.h>
#include <stdint.h>

#include "instrument/ptx_header.h"

/* Limits on untrusted input. */
#define CP_PTX_MAX_BYTES (512u << 20)
#define CP_PTX_MAX_KERNELS 4096u
#define CP_PTX_MAX_SITES (1u << 20)
#define CP_PTX_MAX_NAME 255u

typedef enum cp_site_kind { CP_SITE_RECORD = 0, CP_SITE_EXIT = 1 } cp_site_kind;

/* A place in a kernel body the lowering rewrites. */
typedef struct cp_ptx_site {
  cp_site_kind kind;
  uint32_t line;   /* 1-based line number */
  int is_end;      /* record: an end marker */
  int is_event;    /* record: an event op (Proton's pl.start_event/end_event:
                      outside the scope nesting) rather than a scope record */
  size_t name_off; /* record: scope name in the input */
  size_t name_len;
  size_t at;       /* record: insert after here (end of the marker line);
                      exit: insert before here (start of the statement) */
  size_t after;    /* exit: just past the statement's ';' */
  size_t pred_off; /* exit: predicate register ("%p1"), 0 length if none */
  size_t pred_len;
  int pred_neg;    /* exit: the guard was @!%p */
  int nested;      /* exit: inside a { } block of the body (labels there
                      are not visible outside it) */
  uint32_t src_file; /* record: the last `.loc` before it (file index, 0 if none) */
  uint32_t src_line; /* record: its source line, 0 if unknown */
  size_t src_name_off, src_name_len; /* record: basename of that `.file` in
                      the input, 0 length if unknown */
} cp_ptx_site;

typedef struct cp_ptx_kernel {
  cp_ptx_header h;       /* name, last parameter, launch bounds */
  uint32_t line;         /* line of the .entry directive */
  size_t prologue_at;    /* insert declarations + prologue here */
  size_t body_end;       /* offset of the body's closing '}' */
  uint32_t static_shared; /* bytes of .shared declared in the body */
  cp_ptx_site *sites;
  size_t n_sites, cap_sites;
  size_t n_records;
} cp_ptx_kernel;

typedef struct cp_ptx_module {
  cp_ptx_kernel *kernels; /* only .entry functions that contain markers */
  size_t n_kernels, cap_kernels;
  uint32_t module_shared; /* bytes of module-scope non-extern .shared */
  int has_markers;
} cp_ptx_module;

/* Reads `text` (`size` bytes). Fills `m` (zero it first). Returns 0 or an
 * error code with the message set (EPARSE, EUNSUPPORTED, ELIMIT, ENOMEM). */
int cp_ptx_read(const char *text, size_t size, cp_ptx_module *m);

/* "line L" or "line L (file.py:S)" for a record site whose source
 * position is known, into buf; returns buf. */
const char *cp_ptx_site_where(const char *text, const cp_ptx_site *s, char *buf, size_t n);

/* Frees what cp_ptx_read allocated in `m`. */
void cp_ptx_read_free(cp_ptx_module *m);

#endif
