/* backend/cupti/pcsampling_state.h -- the PC-sampling vendor side's state,
 * one struct for the process (it was the file globals of pcsampling.c),
 * and the functions its three files share:
 *   pcsampling.c        enable / flush / disable, the pcs_lines hooks,
 *                       kernel weights, the counters' report
 *   pcsampling_ctx.c    per-context configuration, ranges opened / closed
 *   pcsampling_range.c  periods closed, fetched and attributed; the launch
 *                       bracket (first launches, exact mode, graph launches)
 * Not used outside those files; the public side is pcsampling.h (not
 * included here, so that the files' includes make no cycle).
 * Invariant: `lock` guards the contexts, their sample buffers, the threads'
 * launches in flight and every CUPTI PC-sampling call but Enable's probe of
 * the API; the atomics are counters or flags read on the launch path. */
#ifndef CP_BACKEND_CUPTI_PCSAMPLING_STATE_H
#define CP_BACKEND_CUPTI_PCSAMPLING_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend/cupti/loader.h"
#include "backend/cupti/pcs_attr.h"
#include "backend/cupti/pcs_lines.h"
#include "backend/cupti/pcs_mode.h"
#include "backend/cupti/state.h"
#include "core/session.h"

#define MAX_CTX 64
#define MAX_THREADS 256 /* launching threads whose launch in flight is kept */
/* Correlation ids of first launches whose samples were tagged (their
 * kernel records weigh nothing: the period's untagged samples are other
 * launches'). Direct-mapped; an id overwritten before its record arrives
 * only lets that record weigh. */
#define OWN_IDS 4096

typedef struct sampled_ctx {
  CUcontext ctx;
  int ok;      /* configured; 0 = refused (kernel level only) */
  int started; /* inside a cuptiPCSamplingStart/Stop range */
  CUpti_PCSamplingData data;
} sampled_ctx;

/* Exact mode: the launch each thread has in flight (API enter to exit),
 * noted again when a period closes under it (its kernel may start after
 * the Stop). Guarded by `lock`. */
typedef struct in_flight {
  int used;
  uint32_t fn;
  cp_launch_site site;
} in_flight;

typedef struct cp_pcsampling_state {
  pthread_mutex_t lock; /* contexts, data */
  const cp_loader_api *api;
  cp_cupti_state *state;
  cp_pcs_options opt;
  cp_pcs_stalls stalls;
  uint32_t stall_ids[CP_PCS_MAX_STALLS];
  cp_pcs *pcs;
  cp_pcs_lines *lines;
  sampled_ctx ctxs[MAX_CTX];
  int n_ctx;
  _Atomic(void *) last_ctx;
  atomic_int on, warned;
  atomic_ullong drain_errors, dropped_reported;
  /* diagnostics: cuptiPCSamplingGetData calls, PC records and samples seen */
  atomic_ullong n_gets, n_pcs, n_total, n_at_disable, n_with_corr;
  /* where exact mode's time goes: ns closing periods (synchronise, Stop,
   * fetch, attribute, Start); periods closed by a second context and by
   * graph launches; launches noted */
  atomic_ullong t_split_ns, n_splits, n_graph_ranges, n_noted;
  /* first launches of a function in ranges of their own, and ns spent on
   * their ranges (synchronise, Stop, fetch, Start before and after) */
  atomic_ullong n_first, t_first_ns;
  /* some context's range was left closed by a first launch's exit */
  atomic_int closed;
  in_flight flights[MAX_THREADS];
  int n_threads;
  _Atomic uint32_t slot_epoch; /* read on the launch path too */
  /* SM counts per device id, looked up once (0: unknown, the time rule). */
  _Atomic uint32_t device_sms[64];
  int time_rule; /* CPROTON_PCS_WEIGHT=time: weigh by duration only */
  _Atomic uint32_t own_ids[OWN_IDS];
} cp_pcsampling_state;

/* The one instance (pcsampling.c). */
extern cp_pcsampling_state cp_pcsampling_g;

/* pcsampling.c: warns once per enable that this GPU gives no samples. */
void cp_pcsampling_warn_once(const char *what, CUptiResult r);

/* pcsampling_ctx.c; callers hold `lock` unless said otherwise. */
void cp_pcsampling_ctx_free_data(CUpti_PCSamplingData *d);
void cp_pcsampling_ctx_range(sampled_ctx *s, int start);
sampled_ctx *cp_pcsampling_ctx_find(void *c);
void cp_pcsampling_ctx_seen(void *c); /* launch path; takes `lock` */
void cp_pcsampling_ctx_adopt(void);  /* takes `lock` */

/* pcsampling_range.c; callers hold `lock` unless said otherwise. */
void cp_pcsampling_range_close_all(void);
int cp_pcsampling_range_end_period(int final);
void cp_pcsampling_range_bracket(void *c, uint32_t corr, const char *name,
                                 const cp_launch_site *site,
                                 int enter); /* launch path; takes `lock` */

#endif
