/* instrument/flow.h -- a kernel body's control flow, reduced to what scope
 * checking needs (cp_flow_*): labels, branches, exits and record markers in
 * text order, with each branch resolved to its label's event.
 *
 * Compilers do not keep markers in source order: nvcc places the copy of an
 * RAII scope's end marker on an early-return path before or after the main
 * path's copy. Scopes are therefore matched along paths, not text.
 *
 * PTX labels are scoped to their { } block: Triton's inline asm repeats
 * `waitLoop:` in one block per mbarrier wait, so a branch goes to the label
 * of its name in the innermost enclosing block. `.loc` / `.file` end at the
 * end of their line, not at a ';' (Triton emits `.loc` before most
 * instructions, branches included). */
#ifndef CP_INSTRUMENT_FLOW_H
#define CP_INSTRUMENT_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "instrument/ptx_read.h"

typedef enum cp_flow_kind {
  CP_FLOW_LABEL = 0,  /* a branch target starts here */
  CP_FLOW_BRANCH = 1, /* bra / bra.uni to `target`; brx.idx is one
                         conditional branch per listed label (the last one
                         as guarded as the brx.idx) */
  CP_FLOW_EXIT = 2,   /* ret / exit */
  CP_FLOW_RECORD = 3  /* record marker: site index `site` */
} cp_flow_kind;

typedef struct cp_flow_event {
  cp_flow_kind kind;
  int cond;        /* branch / exit guarded by a predicate */
  size_t off;      /* offset in the text */
  size_t site;     /* record: index into the kernel's sites */
  int64_t target;  /* branch: index of the label event; -1 if unknown */
  size_t name_off, name_len; /* label / branch target name */
  uint32_t block;  /* label / branch: the { } block it is in (0: the body) */
  size_t list_off, list_end; /* label of a .branchtargets list: the list */
} cp_flow_event;

typedef struct cp_flow {
  cp_flow_event *ev;
  size_t n, cap;
  uint32_t *block_parent; /* per block: its enclosing block (block 0: itself) */
  size_t n_blocks, cap_blocks;
  int indirect;    /* a branch the reader cannot resolve: no CFG */
  const char *why; /* when indirect: what could not be followed (static) */
  size_t why_off;  /* ... and where */
} cp_flow;

/* Reads kernel `k`'s body from `text` into `f` (zeroed first). Errors:
 * ENOMEM. A body the reader cannot follow sets f->indirect, f->why and
 * f->why_off (the first such construct). */
int cp_flow_read(const char *text, const cp_ptx_kernel *k, cp_flow *f);

/* Line number (1-based) of offset `off` in `text`. */
uint32_t cp_flow_line(const char *text, size_t off);

void cp_flow_free(cp_flow *f);

#endif
