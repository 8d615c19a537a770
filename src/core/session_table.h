/* core/session_table.h -- the session slot table, shared by core's
 * session files (session.c: table, capture/deliver; record.c: the recording
 * API) and the session layer above (src/session/: life cycle). Private: not
 * part of the public API. The backend and output format are opaque here:
 * core never calls them (no arrow runs up). */
#ifndef CP_CORE_SESSION_TABLE_H
#define CP_CORE_SESSION_TABLE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/context.h"
#include "core/data.h"
#include "core/phase.h"
#include "core/trace.h"

struct cp_backend_ops;
struct cp_io_format;

typedef struct session {
  int in_use;
  int id;               /* the public id: never reused in a process */
  uint32_t start_epoch;
  cp_context_kind kind;
  int is_trace, gzip;
  int rank; /* options' rank, -1 when unknown */
  const struct cp_backend_ops *backend; /* session layer's */
  char *mode;          /* the backend's mode (periodic_flushing excluded) */
  char path[PATH_MAX]; /* without extension */
  cp_data *data;       /* the current phase's store (scopes, user metrics) */
  cp_trace *trace;     /* the current phase's trace */
  cp_phases phases;    /* persistent per slot; stores are reused */
  const struct cp_io_format *periodic; /* mode="periodic_flushing": parts' format */
  int skip_if_no_kernels;
  int64_t start_wall_ns;    /* CLOCK_REALTIME at start: files other
                               processes wrote since are never replaced */
  _Atomic uint64_t kernels; /* kernel records delivered */
} session;

/* What scope and metric calls read of a slot without a lock (session.c). */
typedef struct cp_ss_hot_slot {
  atomic_uint kind;
  _Atomic(cp_data *) data;
  _Atomic(cp_trace *) trace;
} cp_ss_hot_slot;

/* Locking: see core/session.c. */
extern pthread_mutex_t cp_ss_table_lock;
extern pthread_rwlock_t cp_ss_slots_rw;
extern session cp_ss_slots[CP_MAX_SESSIONS];
extern cp_ss_hot_slot cp_ss_hot[CP_MAX_SESSIONS];
extern atomic_uint cp_ss_active_mask;
extern atomic_uint cp_ss_active_kinds;
extern atomic_uint cp_ss_trace_mask;
extern atomic_uint cp_ss_epoch;
extern int cp_ss_next_id;
extern atomic_uint cp_ss_compactions;

void cp_ss_publish_hot(int i);
cp_context_kind cp_ss_hot_kind(int i);
cp_data *cp_ss_hot_data(int i);
cp_trace *cp_ss_hot_trace(int i);
void cp_ss_set_active(int slot, int on);
int cp_ss_find_slot(int id, int *slot);
int cp_ss_each_session(int id, int (*fn)(int));
void cp_ss_compact_if_idle(void);

/* core/record.c */
int cp_ss_intern(const char *name, const char *what, uint32_t *id);
int cp_record_tensor_metric_fold(const uint64_t *words, size_t n_words,
                                 size_t *n_folded);

#endif
