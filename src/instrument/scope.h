/* instrument/scope.h -- scope-id allocation and nesting validation for one
 * kernel (cp_scope_*). */
#ifndef CP_INSTRUMENT_SCOPE_H
#define CP_INSTRUMENT_SCOPE_H

#include <stdint.h>

#include "instrument/ptx_read.h"

typedef struct cp_scope_table {
  char **names;         /* n owned, NUL-terminated */
  int32_t *parents;     /* n; -1 = top level, CPROTON_SCOPE_PARENT_EVENT for
                           an event (outside the nesting) */
  uint32_t n;
  uint32_t *site_scope; /* per site of the kernel: scope id (records only) */
  char *note;           /* owned; non-NULL when nesting was checked in text
                           order because the control flow could not be
                           followed (what and where) */
  int flow_verified;    /* nesting was checked along every control-flow
                           path: each end finds its scope open, no start
                           finds it open (in-kernel sums then need no
                           open-flag bookkeeping) */
} cp_scope_table;

/* Gives every scope name of kernel `k` (read from `text`) an id in order of
 * first appearance and checks that starts and ends nest in program order.
 * Errors: EPARSE naming kernel, scope and line for an end without a start,
 * crossing scopes, a scope started again while open or never ended, an
 * event with starts but no end (or ends but no start) anywhere in the
 * kernel, a name used both as a scope and as an event; ELIMIT
 * past CP_LAYOUT_MAX_SCOPES scopes; ENOMEM. */
int cp_scope_assign(const char *text, const cp_ptx_kernel *k, cp_scope_table *t);

/* Whether some id of `t` is an event (CPROTON_SCOPE_PARENT_EVENT). */
int cp_scope_has_events(const cp_scope_table *t);

/* Appends `text` to t->note ("; " between notes). Errors: ENOMEM. */
int cp_scope_add_note(cp_scope_table *t, const char *text);

void cp_scope_free(cp_scope_table *t);

#endif
