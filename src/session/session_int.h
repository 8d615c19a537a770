/* session/session_int.h -- what session/start.c and session/finalize.c
 * share: the format lookup and the count of sessions using a backend. */
#ifndef CP_SESSION_INT_H
#define CP_SESSION_INT_H

#include "backend/backend.h"
#include "core/session_table.h"
#include "io/format.h"

const cp_io_format *cp_ss_format_for(cp_io_kind kind, const char *name);
int cp_ss_backend_users(const cp_backend_ops *b);
int cp_ss_flush_session(session *s);
int cp_ss_set_spill_dir(const session *s, cp_trace *t);

#endif
