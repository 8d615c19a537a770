/* session/session_int.h -- what session/start.c and session/finalize.c
 * share (and probe.c): the format lookup, the count of sessions using a
 * backend, each slot's parsed mode. */
#ifndef CP_SESSION_INT_H
#define CP_SESSION_INT_H

#include "backend/backend.h"
#include "core/session_table.h"
#include "io/format.h"

const cp_io_format *cp_ss_format_for(cp_io_kind kind, const char *name);
int cp_ss_backend_users(const cp_backend_ops *b);
int cp_ss_flush_session(session *s);
int cp_ss_set_spill_dir(const session *s, cp_trace *t);
/* Slot `slot`'s backend configuration (its parsed mode); caller holds
 * cp_ss_table_lock. */
const cp_backend_config *cp_ss_config(int slot);

#endif
